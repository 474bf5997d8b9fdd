"""The repository's scripts started from a process that has already imported TensorFlow.

Every runner a test starts would pay TensorFlow's and Keras' start-up first (about 4.6 s of CPU,
`tests/helpers/user_install/sitecustomize.py`), and the suite starts hundreds. Instead each
pytest worker keeps one server process, started like a script (the same interpreter, `ENV`),
that imports TensorFlow, Keras and the project's modules once and runs no TensorFlow op; each
script is then a `fork()` of it: a process of its own, as `python script.py` would be (its own
absl flags, `__main__`, working folder, environment, standard streams and exit code), that
starts in milliseconds.

What cannot be told apart from a fresh interpreter is forked; anything else falls back to
`subprocess.run`: a command other than `python <file>.py ...` or `python -m <module> ...`,
and an environment that differs from the server's in a variable read while TensorFlow loads
(`TF_CPP_MIN_LOG_LEVEL`, `TF_ENABLE_ONEDNN_OPTS`, `PYTHONPATH`, ...; `_READ_AT_IMPORT`).
`BERT_TESTS_COLD_START=1` turns the server off (every script a fresh interpreter).

`WarmRunner.start` forks a script without waiting for it (`subprocess.Popen`'s part of the
interface that tests use, in `WarmProcess`): for runs a test watches, signals or runs side by side.

Run as a module, this file is the server: one JSON request per line on standard input, one
JSON answer per line on standard output.
"""

import atexit
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# Variables a fresh interpreter reads while it imports TensorFlow, Keras or Python itself: a
# request that sets any of them differently from the server runs in a fresh interpreter.
_READ_AT_IMPORT = ("TF_", "CUDA", "XLA_", "KERAS", "PYTHON", "OMP_", "MKL", "OPENBLAS", "LD_")
# ... except these, which TensorFlow reads when the strategy or the first op is created.
_READ_AT_RUN = frozenset({"TF_CONFIG"})
# What the server imports before it forks (each optional: a module that fails to import here
# fails in the script, where the test sees it).
_PRELOAD = (
    "tensorflow",
    "keras",
    "numpy",
    "absl.app",
    "absl.flags",
    "jobs.classifier_run",
    "jobs.squad_run",
    "jobs.ner_run",
    "jobs.pretraining_run",
    "jobs.extraction_run",
    "jobs.export_run",
    "jobs.convert_run",
    "jobs.serve_run",
    "data.pretraining.create",
)


def _import_sensitive(env):
    return {
        key: value
        for key, value in env.items()
        if key.startswith(_READ_AT_IMPORT) and key not in _READ_AT_RUN
    }


# --- the server ------------------------------------------------------------------------------


def _exit_code(code):
    """The exit status of `sys.exit(code)`, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_script(request, answers):
    """In the forked child: runs the request's script as `__main__`; never returns."""
    code = 1
    try:
        answers.close()
        # What the imports registered to run at exit belongs to the server: a script that never
        # imports TensorFlow must not run TensorFlow's (it would start the runtime on the way out).
        atexit._clear()
        # Likewise the absl start-up callbacks TensorFlow's import queued (it counts the GPUs, and
        # so starts the runtime, at `app.run`): a fresh script ran them when it imported it.
        absl_app = sys.modules.get("absl.app")
        if absl_app is not None:
            getattr(absl_app, "_init_callbacks", []).clear()
        if request.get("new_session"):
            os.setsid()  # as `Popen(start_new_session=True)`
        else:
            os.setpgrp()  # a timeout stops the script and whatever it started
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read TMPDIR again
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        args = request["argv"][1:]
        try:
            if args[0] == "-m":
                sys.argv = [args[1], *args[2:]]
                sys.path[0] = os.getcwd()
                runpy.run_module(args[1], run_name="__main__", alter_sys=True)
            else:
                script = os.path.abspath(args[0])
                sys.argv = [args[0], *args[1:]]
                sys.path[0] = os.path.dirname(script)
                runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop.code)
        except BaseException:  # noqa: BLE001 - what the interpreter does with any uncaught one
            traceback.print_exc()
            code = 1
        try:
            atexit._run_exitfuncs()
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _wait(pid, timeout):
    """The child's exit status as `Popen.returncode` gives it, or None after `timeout` s."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def serve():
    """Reads requests from standard input until it closes; answers each on standard output."""
    # Answers go out on a copy of standard output; whatever an import prints goes to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for name in _PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001,S112 - see _PRELOAD
            continue
    print(json.dumps({"ready": True}), file=answers, flush=True)
    started = set()  # scripts started without waiting ("start"), not yet reaped
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "wait":
            code = _wait(request["pid"], request["timeout"])
            if code is not None:
                started.discard(request["pid"])
            print(json.dumps({"returncode": code}), file=answers, flush=True)
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_script(request, answers)
        if request.get("op") == "start":
            started.add(pid)
            print(json.dumps({"pid": pid}), file=answers, flush=True)
            continue
        code = _wait(pid, request["timeout"])
        if code is None:
            _kill(pid)
        print(json.dumps({"returncode": code}), file=answers, flush=True)
    # The test process has gone: nothing it started outlives it.
    for pid in started:
        _kill(pid)


def _kill(pid):
    """Kills a child and whatever it started (its process group), and reaps it."""
    for target in (-pid, pid):
        try:
            os.kill(target, 9)
        except ProcessLookupError:
            pass
    os.waitpid(pid, 0)


# --- the client ------------------------------------------------------------------------------


class WarmRunner:
    """A pytest worker's handle on its server; `run` mirrors `subprocess.run(capture_output=True,
    text=True)`."""

    def __init__(self, env):
        self._env = dict(env)
        self._lock = threading.Lock()
        self._server = None
        self._folder = tempfile.mkdtemp(prefix="warm_runner_")

    def _start(self):
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.warm_runner"],
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        if json.loads(server.stdout.readline() or "{}").get("ready"):
            return server
        server.kill()
        return None

    def forks(self, cmd, env):
        """Whether `cmd` in `env` can be forked from the server (see the module's docstring)."""
        if os.environ.get("BERT_TESTS_COLD_START") == "1" or len(cmd) < 2:
            return False
        if os.path.realpath(str(cmd[0])) != os.path.realpath(sys.executable):
            return False
        first = str(cmd[1])
        if first == "-m" and len(cmd) > 2 or first.endswith(".py") and os.path.isfile(first):
            return _import_sensitive(env) == _import_sensitive(self._env)
        return False

    def _ask(self, request):
        """Sends one request to the server (started on first use); its answer, or None when
        no server can start."""
        if self._server is None or self._server.poll() is not None:
            self._server = self._start()
        if self._server is None:
            return None
        print(json.dumps(request), file=self._server.stdin, flush=True)
        return json.loads(self._server.stdout.readline())

    def run(self, cmd, cwd, env, timeout):
        cmd = [str(word) for word in cmd]
        cold = lambda: subprocess.run(  # noqa: E731 - a fresh interpreter, as a user's
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
        if not self.forks(cmd, env):
            return cold()
        with self._lock:
            out = os.path.join(self._folder, "stdout")
            err = os.path.join(self._folder, "stderr")
            answer = self._ask(_script(cmd, cwd, env, out, err, timeout=timeout))
            if answer is None:
                return cold()
            with open(out) as f_out, open(err) as f_err:
                stdout, stderr = f_out.read(), f_err.read()
        if answer["returncode"] is None:
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(cmd, answer["returncode"], stdout, stderr)

    def start(self, cmd, cwd, env, stdout=None, stderr=None, start_new_session=False):
        """As `subprocess.Popen(cmd, ..., text=True)` with `stdout` and `stderr` each PIPE,
        DEVNULL or None (not read): a `WarmProcess` forked from the server, or a `Popen` where
        the command cannot be forked."""
        cmd = [str(word) for word in cmd]
        streams = (subprocess.PIPE, subprocess.DEVNULL, None)

        def cold():
            return subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdout=stdout,
                stderr=stderr,
                text=True,
                start_new_session=start_new_session,
            )

        if not self.forks(cmd, env) or stdout not in streams or stderr not in streams:
            return cold()
        folder = tempfile.mkdtemp(dir=self._folder)
        paths = {
            name: os.path.join(folder, name) if stream == subprocess.PIPE else os.devnull
            for name, stream in (("stdout", stdout), ("stderr", stderr))
        }
        request = _script(cmd, cwd, env, op="start", new_session=bool(start_new_session), **paths)
        with self._lock:
            answer = self._ask(request)
        if answer is None:
            return cold()
        return WarmProcess(self, cmd, answer["pid"], paths)

    def wait_for(self, pid, timeout):
        """The exit status of a started script (None while it runs on after `timeout` s)."""
        with self._lock:
            return self._ask({"op": "wait", "pid": pid, "timeout": timeout})["returncode"]


def _script(argv, cwd, env, stdout, stderr, **extra):
    """A request that the server run `argv` in `cwd` and `env`, its streams to the files
    `stdout` and `stderr`; `extra`: the timeout of a run, or the "start" op and its session."""
    return {
        "argv": argv,
        "cwd": str(cwd),
        "env": dict(env),
        "stdout": stdout,
        "stderr": stderr,
        **extra,
    }


class WarmProcess:
    """A script started by `WarmRunner.start`: the part of `subprocess.Popen`'s interface the
    tests use (`pid`, `returncode`, `poll`, `wait`, `communicate`, `send_signal`, `kill`,
    `terminate`). Its output is read once it has ended, as `communicate` returns it."""

    def __init__(self, runner, args, pid, paths):
        self._runner, self.args, self.pid, self._paths = runner, args, pid, paths
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.returncode = self._runner.wait_for(self.pid, 0)
        return self.returncode

    def wait(self, timeout=None):
        # The server waits in slices of at most a second, so that a test's other requests are
        # not held up long.
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 1.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
            self.returncode = self._runner.wait_for(self.pid, min(left, 1.0))
            if self.returncode is None and deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def _read(self, name):
        path = self._paths[name]
        if path == os.devnull:
            return None
        with open(path) as f:
            return f.read()

    def communicate(self, timeout=None):
        self.wait(timeout)
        return self._read("stdout"), self._read("stderr")

    def send_signal(self, signum):
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)


if __name__ == "__main__":
    serve()
