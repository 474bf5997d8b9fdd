"""Mutation check: does the test suite catch deliberate bugs in the library code?

Each mutant of `mutants.json` (beside this file) is a one-line change to the library
(`{"id", "file", "line", "mutant", "why"}`: the stripped original line, which must occur exactly
once in the file, and its stripped replacement, indented as the original). For each mutant, in a
scratch copy of the repository, the line is replaced, then pytest runs first the tests that
mirror the mutated file's folder ("targeted": `data/squad/x.py` -> `tests/data/squad`, else the
nearest existing parent such as `tests/data`; `jobs/` and `command_line/` -> `tests/runners`)
and, if they all pass, the rest of the tier. A mutant is caught when a test fails; the file is
restored after each mutant, also on errors and Ctrl-C.

The copy is a `git worktree add --detach` of HEAD in a temporary folder, removed at the end
(uncommitted changes of the caller's checkout are not in it), or an existing checkout named by
`--repo`; the caller's working tree is never changed. `BERT_BEAM_PYTHON` passes through from the
caller's environment.

Usage:
    python tests/mutation/run_mutants.py --list
    python tests/mutation/run_mutants.py --tier quick --only fio-no-rename
    python tests/mutation/run_mutants.py --tier full --out mutation_results.json

Tiers: quick is `pytest -m "not slow"`, full the whole suite. Before the mutants the same tier
runs once unmutated on their targeted folders; a failure there ends the run with one sentence.
The results (per mutant: id, caught, caught_by, stage, seconds) are written to `--out` after
every mutant, atomically; `--resume` keeps the mutants already in `--out` and runs the others.

Comparing two suites (the tests before and after a change to them): run one side, then the
other with `--first` naming the first side's results. Each mutant then first runs, in one
process, the test that caught it there (stage "known", where that test exists on this side),
before its targeted folder and the rest: a mutant caught on both sides costs one test, and
only the survivors need the whole tier. `--mutants` reads another mutant list (an earlier
commit's, for a checkout of that commit given by `--repo`); `--no-baseline` leaves out the
unmutated check, for a commit whose suite is known to pass (its CI run).

    python tests/mutation/run_mutants.py --tier full --out after.json --no-baseline
    python tests/mutation/run_mutants.py --tier full --repo ../before --first after.json \\
        --mutants before_mutants.json --out before.json --no-baseline
"""

import argparse
import contextlib
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MUTANTS_FILE = os.path.join(HERE, "mutants.json")
DEFAULT_TIMEOUT_S = 1500
TIERS = {"quick": ["-m", "not slow"], "full": []}
# Library folders whose tests are the runners' (they are the runners' code paths).
RUNNER_FOLDERS = ("jobs", "command_line")
# Library folders tested elsewhere than the runners: the export jobs by the export tests.
TEST_FOLDER_OF = {"jobs/export": "tests/serving"}
_REQUIRED_KEYS = ("id", "file", "line", "mutant", "why")
_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (.+)$")
# pytest's exit status when it collected no test (e.g. a tier that deselects every test).
_NO_TESTS = 5
# pytest's exit status for a usage error, such as a node id that does not exist in this suite.
_USAGE_ERROR = 4
# Seconds a timed-out pytest gets to stop after SIGTERM before SIGKILL.
_GRACE_S = 30


class MutationError(Exception):
    """A problem that ends the run; its message is the one sentence the user sees."""


# --- Mutants -------------------------------------------------------------------------------


def load_mutants(path=MUTANTS_FILE):
    """Reads the mutant list.

    Args:
        path: the JSON file (a list of objects with `_REQUIRED_KEYS`).

    Returns:
        The list of mutant dicts, in file order.

    Raises:
        MutationError: the file is not such a list, or two mutants share an id.
    """
    with open(path, encoding="utf-8") as f:
        mutants = json.load(f)
    if not isinstance(mutants, list):
        raise MutationError(f"{path} must hold a JSON list of mutants.")
    seen = set()
    for index, mutant in enumerate(mutants):
        missing = [k for k in _REQUIRED_KEYS if not isinstance(mutant.get(k), str)]
        if missing:
            raise MutationError(f"{path}: mutant {index} has no string {', '.join(missing)}.")
        if mutant["id"] in seen:
            raise MutationError(f"{path}: the id {mutant['id']!r} is used twice.")
        seen.add(mutant["id"])
    return mutants


def select(mutants, only):
    """The mutants named in `only` (comma-separated ids, in list order), or all of them.

    Raises:
        MutationError: an id that is not in the list.
    """
    if not only:
        return list(mutants)
    wanted = [i.strip() for i in only.split(",") if i.strip()]
    known = {m["id"] for m in mutants}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise MutationError(
            f"Unknown mutant id(s) {', '.join(unknown)}: --list shows the ids of {MUTANTS_FILE}."
        )
    return [m for m in mutants if m["id"] in wanted]


def targeted_folder(repo, file):
    """The tests folder that mirrors the library file `file` (a path relative to `repo`).

    `jobs/export/` maps to `tests/serving` (the export tests), the rest of `jobs/` and
    `command_line/` to `tests/runners`; any other file to `tests/<its folder>`
    if that exists, else the nearest existing parent (`modeling/formats/y.py` ->
    `tests/modeling`), else `tests`.

    Returns:
        The folder, relative to `repo`, with "/" separators.
    """
    parts = file.replace(os.sep, "/").split("/")[:-1]
    for folder, tests in TEST_FOLDER_OF.items():
        inside = parts[: folder.count("/") + 1] == folder.split("/")
        if inside and os.path.isdir(os.path.join(repo, tests)):
            return tests
    if parts and parts[0] in RUNNER_FOLDERS:
        return "tests/runners"
    for depth in range(len(parts), 0, -1):
        candidate = "/".join(["tests", *parts[:depth]])
        if os.path.isdir(os.path.join(repo, candidate)):
            return candidate
    return "tests"


def _covering(folders):
    """`folders` without those inside another of them, sorted (the baseline's paths)."""
    unique = sorted(set(folders))
    return [f for f in unique if not any(f.startswith(g + "/") for g in unique if g != f)]


def _clear_bytecode(path):
    """Removes the cached bytecode of the source file `path`, so the next import compiles it."""
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    for cached in glob.glob(os.path.join(glob.escape(folder), "__pycache__", f"{stem}.*.pyc")):
        with contextlib.suppress(OSError):
            os.remove(cached)


def _git(repo, *args, check=True):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=check)


@contextlib.contextmanager
def applied(repo, mutant):
    """Applies `mutant` to its file in `repo` for the duration of the block, then restores it.

    The original line must occur exactly once among the file's stripped lines; the replacement
    keeps its indentation. The file is restored with `git checkout` (and checked byte for byte)
    when the block ends, whatever ends it.

    Raises:
        MutationError: the file is missing or has local changes, or the line is not there
            exactly once.
    """
    path = os.path.join(repo, mutant["file"])
    if not os.path.isfile(path):
        raise MutationError(f"{mutant['id']}: {mutant['file']} does not exist in {repo}.")
    if _git(repo, "diff", "--quiet", "--", mutant["file"], check=False).returncode:
        raise MutationError(
            f"{mutant['id']}: {mutant['file']} has local changes in {repo}; commit or revert "
            "them first (the file is restored with git checkout)."
        )
    with open(path, "rb") as f:
        original = f.read()
    lines = original.decode("utf-8").split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == mutant["line"]]
    if len(hits) != 1:
        raise MutationError(
            f"{mutant['id']}: the line {mutant['line']!r} occurs {len(hits)} times in "
            f"{mutant['file']}, not once; update mutants.json to the code."
        )
    index = hits[0]
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines[index] = indent + mutant["mutant"]
    try:
        with open(path, "wb") as f:
            f.write("\n".join(lines).encode("utf-8"))
        _clear_bytecode(path)
        yield
    finally:
        restored = _git(repo, "checkout", "--", mutant["file"], check=False)
        with open(path, "rb") as f:
            if restored.returncode or f.read() != original:
                with open(path, "wb") as out:
                    out.write(original)
        _clear_bytecode(path)


# --- pytest --------------------------------------------------------------------------------


def _first_failure(output):
    """The node id of the first FAILED/ERROR line of pytest's short summary, or None."""
    for line in output.splitlines():
        match = _SUMMARY_LINE.match(line.strip())
        if match:
            return match.group(2).split(" - ", 1)[0].strip()
    return None


def _stop(process):
    """Ends pytest and every process it started in its session: SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, _GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_pytest(repo, paths, tier, timeout, scratch, ignore=(), workers=2):
    """Runs the tier's tests of `paths` in `repo`, stopping at the first failure.

    Args:
        repo: the checkout to run in.
        paths: test folders relative to `repo`.
        tier: "quick" or "full".
        timeout: seconds before pytest and its children are stopped.
        scratch: a folder for pytest's base temporary folder and its output.
        ignore: folders left out (`--ignore`).
        workers: pytest-xdist worker processes; 0 runs the tests in pytest's own process (no
            workers to start: the quicker stop for a few folders).

    Returns:
        (status, first_failure, output_tail): status "passed" (no test failed, or none was
        collected), "failed", "timeout" or "unusable" (pytest refused the paths, e.g. a node
        id this suite does not have); first_failure the node id of the first FAILED/ERROR
        line (or a note on pytest's exit status where it printed none); output_tail the last
        lines of pytest's output.
    """
    basetemp = os.path.join(scratch, "basetemp")
    log_path = os.path.join(scratch, "pytest.log")
    command = [
        sys.executable, "-m", "pytest", "-q", "-x", "-rfE", "-p", "no:cacheprovider",
        *(["-n", str(workers), "--dist", "loadscope"] if workers else []),
        f"--basetemp={basetemp}",
        *TIERS[tier], *paths, *(f"--ignore={folder}" for folder in ignore),
    ]  # fmt: skip
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            cwd=repo,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            returncode = None
        except BaseException:
            _stop(process)
            raise
        finally:
            shutil.rmtree(basetemp, ignore_errors=True)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        output = f.read()
    tail = "\n".join(output.splitlines()[-30:])
    if returncode is None:
        return "timeout", None, tail
    if returncode in (0, _NO_TESTS):
        return "passed", None, tail
    if returncode == _USAGE_ERROR:
        return "unusable", None, tail
    failure = _first_failure(output)
    if failure is None:
        last = output.strip().splitlines()[-1] if output.strip() else "no output"
        failure = f"pytest exit status {returncode}: {last}"
    return "failed", failure, tail


# --- The run -------------------------------------------------------------------------------


def _toplevel(path):
    result = _git(path, "rev-parse", "--show-toplevel", check=False)
    return os.path.realpath(result.stdout.strip()) if result.returncode == 0 else None


@contextlib.contextmanager
def scratch_copy(repo_arg, scratch):
    """Yields the checkout to mutate: `repo_arg`, or a detached worktree of HEAD in `scratch`.

    Raises:
        MutationError: `repo_arg` is not a git checkout or is the caller's own working tree, or
            the worktree cannot be made.
    """
    caller = _toplevel(HERE)
    if repo_arg:
        repo = _toplevel(repo_arg)
        if repo is None:
            raise MutationError(f"--repo {repo_arg} is not a git checkout.")
        if repo in (caller, _toplevel(os.getcwd())):
            raise MutationError(
                f"--repo {repo_arg} is the working tree this command runs from; mutants are "
                "never applied to it: leave out --repo (a temporary worktree is made) or name "
                "another checkout."
            )
        yield repo
        return
    if caller is None:
        raise MutationError(f"{HERE} is not inside a git checkout: pass --repo.")
    worktree = os.path.join(scratch, "repo")
    made = _git(caller, "worktree", "add", "--detach", worktree, "HEAD", check=False)
    if made.returncode:
        raise MutationError(f"git worktree add failed: {made.stderr.strip()}")
    try:
        yield worktree
    finally:
        _git(caller, "worktree", "remove", "--force", worktree, check=False)
        _git(caller, "worktree", "prune", check=False)


def _write_json_atomically(path, value):
    folder = os.path.dirname(os.path.abspath(path))
    handle, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)
            f.write("\n")
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temp)


def _duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


def known_catcher(repo, node_id):
    """`node_id` (a test that caught the mutant elsewhere) if its test file is in `repo`."""
    if not node_id or "::" not in node_id:
        return None
    return node_id if os.path.isfile(os.path.join(repo, node_id.split("::", 1)[0])) else None


def _targeted_workers(repo, folder):
    """0 (pytest's own process) for a small folder; 2 workers for a large one, such as
    tests/runners, whose tests mostly wait on the runners they start."""
    files = glob.glob(os.path.join(repo, folder, "**", "test_*.py"), recursive=True)
    return 2 if len(files) >= 10 else 0


def run_mutant(repo, mutant, tier, timeout, scratch, known=None):
    """Applies one mutant and runs its targeted tests, then (if they pass) the rest of the tier.

    Args:
        known: the node id of a test that caught this mutant in another suite; run first, in
            one process (stage "known"). A test this suite does not have is passed over.

    The timeout covers every stage together.

    Returns:
        The mutant's result dict: id, file, targeted, status ("caught", "survived" or
        "timeout"), caught, caught_by, stage ("known", "targeted", "rest" or None), seconds.
    """
    targeted = targeted_folder(repo, mutant["file"])
    result = {"id": mutant["id"], "file": mutant["file"], "targeted": targeted}
    start = time.monotonic()
    status, failure, stage = "survived", None, None
    with applied(repo, mutant):
        # The targeted folder in one process where it is small (it stops at the first failure
        # without waiting for a second worker), then the rest of the tier in two.
        stages = [("known", [known], (), 0)] if known else []
        stages.append(("targeted", [targeted], (), _targeted_workers(repo, targeted)))
        if targeted != "tests":
            stages.append(("rest", ["tests"], (targeted,), 2))
        for name, paths, ignore, workers in stages:
            left = timeout - (time.monotonic() - start)
            outcome, failure, _ = run_pytest(
                repo, paths, tier, max(left, 1), scratch, ignore, workers
            )
            if outcome == "unusable" and name == "known":
                continue
            if outcome == "unusable":
                outcome, failure = "failed", f"pytest refused {' '.join(paths)}"
            if outcome != "passed":
                status = "caught" if outcome == "failed" else "timeout"
                stage = name
                break
    result.update(
        status=status,
        caught=status == "caught",
        caught_by=failure,
        stage=stage,
        seconds=round(time.monotonic() - start, 1),
    )
    return result


def _report(results, tier, commit, total, out):
    caught = sum(r["caught"] for r in results)
    summary = {
        "tier": tier,
        "commit": commit,
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "total": total,
        "done": len(results),
        "caught": caught,
        "survived": [r["id"] for r in results if r["status"] == "survived"],
        "timeouts": [r["id"] for r in results if r["status"] == "timeout"],
        "results": results,
    }
    _write_json_atomically(out, summary)
    return summary


def read_catchers(paths):
    """{mutant id: the node id that caught it} from earlier results files (first file wins)."""
    catchers = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for result in json.load(f)["results"]:
                if result.get("caught") and result.get("caught_by"):
                    catchers.setdefault(result["id"], result["caught_by"])
    return catchers


def _earlier_results(out, tier, commit):
    """The results already in `out` for this tier and commit (for --resume), else []."""
    if not os.path.isfile(out):
        return []
    with open(out, encoding="utf-8") as f:
        summary = json.load(f)
    if summary.get("tier") != tier or summary.get("commit") != commit:
        raise MutationError(
            f"--resume: {out} holds tier {summary.get('tier')} at {summary.get('commit')}, not "
            f"tier {tier} at {commit}; name another --out."
        )
    return [r for r in summary["results"] if r["status"] != "timeout"]


def run(mutants, tier, timeout, repo_arg, out, catchers=None, baseline=True, resume=False):
    """Checks the unmutated tier on the targeted folders, then runs every mutant.

    Args:
        catchers: {mutant id: node id} of tests to run first (`--first`).
        baseline: whether to run the unmutated check first.
        resume: keep the results already in `out` and run only the other mutants.

    Returns:
        The summary dict written to `out`.

    Raises:
        MutationError: the unmutated tests fail, or a mutant cannot be applied.
    """
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        with scratch_copy(repo_arg, scratch) as repo:
            commit = _git(repo, "rev-parse", "HEAD").stdout.strip()
            folders = _covering(targeted_folder(repo, m["file"]) for m in mutants)
            results = _earlier_results(out, tier, commit) if resume else []
            kept = {r["id"] for r in results}
            # With --only, the results kept from earlier runs count too.
            total = len(kept | {m["id"] for m in mutants})
            if baseline:
                _baseline(repo, folders, tier, timeout, scratch)
            started = time.monotonic()
            summary = _report(results, tier, commit, total, out)
            todo = [m for m in mutants if m["id"] not in kept]
            for done, mutant in enumerate(todo, start=1):
                known = known_catcher(repo, (catchers or {}).get(mutant["id"]))
                result = run_mutant(repo, mutant, tier, timeout, scratch, known)
                results.append(result)
                summary = _report(results, tier, commit, total, out)
                elapsed = time.monotonic() - started
                left = elapsed / done * (len(todo) - done)
                if result["status"] == "caught":
                    verdict = f"caught by {result['caught_by']} ({result['stage']})"
                else:
                    verdict = result["status"].upper()
                print(
                    f"[{len(results)}/{total}] {mutant['id']}: {verdict}, "
                    f"{_duration(result['seconds'])} | elapsed {_duration(elapsed)}, "
                    f"about {_duration(left)} left",
                    flush=True,
                )
    return summary


def _baseline(repo, folders, tier, timeout, scratch):
    """Runs the unmutated tier on `folders`; raises MutationError if a test fails."""
    print(f"Unmutated check of tier {tier} on {' '.join(folders)} ({repo}) ...", flush=True)
    started = time.monotonic()
    outcome, failure, tail = run_pytest(repo, folders, tier, timeout * len(folders), scratch)
    if outcome != "passed":
        what = f"fails at {failure}" if failure else f"ends {outcome}"
        raise MutationError(
            f"The unmutated tests of tier {tier} on {' '.join(folders)} {what}, so no "
            f"mutant can be judged: fix the suite first. pytest's last lines:\n{tail}"
        )
    print(f"  passed in {_duration(time.monotonic() - started)}", flush=True)


def print_list(mutants):
    """Prints each mutant: id, file, targeted tests folder, and what a user would see."""
    for mutant in mutants:
        folder = targeted_folder(os.path.dirname(os.path.dirname(HERE)), mutant["file"])
        print(f"{mutant['id']}  {mutant['file']} -> {folder}")
        print(f"    - {mutant['line']}")
        print(f"    + {mutant['mutant']}")
        print(f"    {mutant['why']}")
    print(f"{len(mutants)} mutants")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    """Parses the command line and runs (or lists) the mutants; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="quick")
    parser.add_argument("--only", help="comma-separated mutant ids (default: all)")
    parser.add_argument("--repo", help="an existing checkout to mutate (default: a worktree)")
    parser.add_argument("--out", default="mutation_results.json", help="the results JSON")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per mutant"
    )
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--mutants", default=MUTANTS_FILE, help="the mutant list (JSON)")
    parser.add_argument(
        "--first", help="comma-separated results files: run the test that caught each there first"
    )
    parser.add_argument("--no-baseline", action="store_true", help="leave out the unmutated check")
    parser.add_argument("--resume", action="store_true", help="keep the results already in --out")
    args = parser.parse_args(argv)
    try:
        mutants = select(load_mutants(args.mutants), args.only)
        if args.list:
            print_list(mutants)
            return 0
        catchers = read_catchers(args.first.split(",")) if args.first else None
        signal.signal(signal.SIGTERM, _interrupt)
        summary = run(
            mutants, args.tier, args.timeout, args.repo, args.out,
            catchers, baseline=not args.no_baseline, resume=args.resume,
        )  # fmt: skip
    except MutationError as err:
        print(f"run_mutants: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("run_mutants: interrupted; every mutated file was restored.", file=sys.stderr)
        return 130
    if summary["survived"]:
        print(f"survived: {', '.join(summary['survived'])}")
    if summary["timeouts"]:
        print(f"timeouts: {', '.join(summary['timeouts'])}")
    print(f"caught {summary['caught']} of {summary['total']} (tier {args.tier})")
    print(f"results: {os.path.abspath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
