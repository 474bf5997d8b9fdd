"""tests/helpers/warm_runner.py: a script forked warm behaves as the same script started by
`subprocess` (exit status, streams, environment, signals, process group)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers.scripts import ENV, REPO, run_in_repo, start_in_repo

_SCRIPT = """
import os, sys, time
print("out", os.environ.get("WARM_TEST_VALUE"), sys.argv[1:])
print("err", os.getcwd() == os.environ["WARM_TEST_CWD"], file=sys.stderr)
if sys.argv[1] == "sleep":
    time.sleep(60)
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(_SCRIPT)
    return path


def _env(**extra):
    return {**ENV, "WARM_TEST_CWD": REPO, **extra}


def _cold(cmd, env, **kwargs):
    return subprocess.Popen(cmd, cwd=REPO, env=env, text=True, **kwargs)


@pytest.mark.parametrize("code", ["0", "3"])
def test_started_script_ends_as_a_fresh_interpreter_does(script, code):
    cmd = [sys.executable, str(script), code, "x y"]
    env = _env(WARM_TEST_VALUE="v")
    pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    warm = start_in_repo(cmd, env=env, **pipes)
    cold = _cold(cmd, env, **pipes)
    assert type(warm).__name__ == "WarmProcess"
    assert warm.communicate(timeout=60) == cold.communicate(timeout=60)
    assert warm.returncode == cold.returncode == int(code)
    assert warm.poll() == int(code)
    # The blocking form gives the same.
    done = run_in_repo(cmd, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (int(code), *cold.communicate())


def test_signals_reach_the_script_and_its_group(script):
    cmd = [sys.executable, str(script), "sleep"]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        warm = start_in_repo(cmd, env=_env(), stderr=subprocess.PIPE, start_new_session=True)
        cold = _cold(cmd, _env(), stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(1.5)  # both asleep in the script
        assert warm.poll() is None and cold.poll() is None
        assert os.getpgid(warm.pid) == warm.pid
        os.killpg(warm.pid, signum)
        os.killpg(cold.pid, signum)
        assert warm.wait(timeout=60) == cold.wait(timeout=60) == -signum
    with pytest.raises(subprocess.TimeoutExpired):
        stuck = start_in_repo(cmd, env=_env(), stdout=subprocess.DEVNULL)
        try:
            stuck.wait(timeout=0.5)
        finally:
            stuck.kill()
            assert stuck.wait(timeout=60) == -signal.SIGKILL
