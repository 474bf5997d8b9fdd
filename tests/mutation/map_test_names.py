"""Maps every test of one suite to its test in another: the "nothing dropped" half of a suite change.

Each input is pytest's node ids, one per line (`pytest --collect-only -q`; the lines without
`::` are ignored). Every test of the earlier suite must be in the later one:

- **same**: the same node id;
- **moved**: the module moved or was renamed (`tests/training/test_sweep_report.py` ->
  `tests/sweep/test_report.py`) and the test's name and parameters are unchanged, found in
  exactly one later module;
- **renumbered**: a documented-command case of `tests/test_docs.py`, whose id ends with its
  position among all the documented commands (`[docs/ner.md:run_ner.py:33]`): the same doc and
  runner at another position. Positions move whenever a doc gains a command, so the cases are
  matched by (doc, runner) counts: the later suite must have at least as many of each.

A test of the earlier suite with none of these is reported as dropped, and the exit status is 1.

With `--roots EARLIER LATER` (the two checkouts), each mapped test function's checks are also
counted in both: its `assert` statements, `pytest.raises` / `pytest.warns` blocks and
`np.testing` calls. A test with fewer checks later is reported as weaker (exit status 1); a
check moved into a helper the test calls shows up here too, for a reader to look at.

Usage:
    (cd before && pytest --collect-only -q) > before.txt
    (cd after && pytest --collect-only -q) > after.txt
    python tests/mutation/map_test_names.py before.txt after.txt --out mapping.tsv \\
        --roots before after
"""

import argparse
import ast
import collections
import functools
import hashlib
import os
import re
import sys

_LONGEST_ID = 300
# `test_documented_command_runs_to_its_first_missing_file[docs/x.md:script.py:12]`
_DOC_CASE = re.compile(r"^(tests/test_docs\.py::\w+)\[(.+):(\d+)\]$")


def short_id(node_id, limit=_LONGEST_ID):
    """`node_id`, or where longer than `limit` (a parameter such as 100,000 nested brackets) its
    first 200 characters and a digest of the whole, so that listings stay small and exact."""
    if len(node_id) <= limit:
        return node_id
    return f"{node_id[:200]}...sha1:{hashlib.sha1(node_id.encode()).hexdigest()[:16]}"


def read_ids(path):
    """The node ids of a `pytest --collect-only -q` listing, in order (long ones shortened)."""
    with open(path, encoding="utf-8") as f:
        return [short_id(line.strip()) for line in f if "::" in line]


def _doc_key(node_id):
    match = _DOC_CASE.match(node_id)
    return (match.group(1), match.group(2)) if match else None


def map_ids(before, after):
    """Pairs each earlier test with a later one.

    Args:
        before: the earlier suite's node ids.
        after: the later suite's node ids.

    Returns:
        (rows, dropped, added): rows a list of (earlier id, later id, how) for every earlier test
        that has a later one; dropped the earlier ids with none; added the later ids that no
        earlier test maps to.
    """
    later, earlier = set(after), set(before)
    by_test = collections.defaultdict(list)  # "name[params]" -> later ids
    for node_id in after:
        by_test[node_id.split("::", 1)[1]].append(node_id)
    doc_cases = collections.defaultdict(list)  # (function, "doc:runner") -> later ids
    for node_id in after:
        key = _doc_key(node_id)
        if key:
            doc_cases[key].append(node_id)
    rows, dropped, used = [], [], set()
    for node_id in before:
        if node_id in later:
            rows.append((node_id, node_id, "same"))
            used.add(node_id)
            continue
        key = _doc_key(node_id)
        if key:
            free = [c for c in doc_cases[key] if c not in used and c not in earlier]
            if free:
                rows.append((node_id, free[0], "renumbered"))
                used.add(free[0])
                continue
        candidates = [c for c in by_test[node_id.split("::", 1)[1]] if c not in used]
        if len(candidates) == 1:
            rows.append((node_id, candidates[0], "moved"))
            used.add(candidates[0])
            continue
        dropped.append(node_id)
    added = [node_id for node_id in after if node_id not in used]
    return rows, dropped, added


@functools.cache
def _checks_per_function(path):
    """{function name: number of checks in its body} for a test module (empty if absent)."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    counts = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            counts[node.name] = sum(_is_check(inner) for inner in ast.walk(node))
    return counts


def _is_check(node):
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        text = ast.unparse(node.func)
        return text in ("pytest.raises", "pytest.warns") or text.startswith("np.testing.")
    return False


def checks(root, node_id):
    """The number of checks in a node id's test function, under the checkout `root`."""
    path, name = node_id.split("::", 1)
    name = name.split("[", 1)[0].split("::")[-1]
    return _checks_per_function(os.path.join(root, path)).get(name)


def weaker(rows, before_root, after_root):
    """(earlier id, later id, checks before, checks after) where the later test checks less."""
    found = []
    for earlier, later, _ in rows:
        before_checks = checks(before_root, earlier)
        after_checks = checks(after_root, later)
        if before_checks is not None and (after_checks or 0) < before_checks:
            found.append((earlier, later, before_checks, after_checks))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the earlier suite's `pytest --collect-only -q` output")
    parser.add_argument("after", help="the later suite's")
    parser.add_argument("--out", help="write the mapping here (TSV: before, after, how)")
    parser.add_argument(
        "--roots", nargs=2, metavar=("EARLIER", "LATER"), help="the two checkouts: count checks"
    )
    args = parser.parse_args(argv)
    rows, dropped, added = map_ids(read_ids(args.before), read_ids(args.after))
    fewer = weaker(rows, *args.roots) if args.roots else []
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("before\tafter\thow\n")
            for row in rows:
                f.write("\t".join(row) + "\n")
            for node_id in added:
                f.write(f"\t{node_id}\tnew\n")
    counts = collections.Counter(how for _, _, how in rows)
    print(
        f"{len(rows)} earlier tests mapped ({', '.join(f'{n} {k}' for k, n in counts.items())}); "
        f"{len(dropped)} dropped; {len(added)} new"
    )
    for node_id in dropped:
        print(f"dropped: {node_id}")
    if args.roots:
        functions = {earlier.split("[", 1)[0] for earlier, _, _ in rows}
        print(f"{len(functions)} test functions' checks counted; {len(fewer)} tests check less")
    for earlier, later, before_checks, after_checks in fewer:
        print(f"weaker: {earlier} ({before_checks} checks) -> {later} ({after_checks})")
    return 1 if dropped or fewer else 0


if __name__ == "__main__":
    sys.exit(main())
