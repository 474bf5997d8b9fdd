"""The serving contract (serving/contract.py): one table of instance keys, one check of them
(the server's and every predictor's), and a TFLite serving path that starts without
TensorFlow."""

import json
import subprocess
import sys

import pytest

from serving.contract import INSTANCE_KEYS, check_instances, instance_keys
from serving.http_server import BadRequest, read_instances
from tests.helpers.scripts import ENV, REPO


def test_each_task_has_its_keys_once():
    assert instance_keys("classifier").required == ("text_a",)
    assert instance_keys("classifier", pairs=True).required == ("text_a", "text_b")
    assert instance_keys("encoder").optional == ("text_b",)
    # `pairs` is a classifier's only: another task's keys do not change with it.
    assert instance_keys("squad", pairs=True) == instance_keys("squad")
    assert {task for task, _ in INSTANCE_KEYS} == {"classifier", "ner", "squad", "encoder"}


@pytest.mark.parametrize(
    "instances, words",
    [
        ([{"question": "q"}], ['Instance 0 has no "context"', '"question" and "context"']),
        ([{"question": "q", "context": 3}], ['Instance 0\'s "context" is a JSON int']),
        ([{"question": "q", "context": "c", "id": "1"}], ['unknown key "id"']),
        ([], ['"instances" must be a non-empty list']),
        (["q"], ["Instance 0 is a JSON str"]),
    ],
)
def test_the_server_and_the_predictors_refuse_an_instance_in_one_sentence(instances, words):
    keys = instance_keys("squad")
    with pytest.raises(ValueError) as by_predictor:
        check_instances(instances, keys)
    body = json.dumps({"instances": instances}).encode()
    with pytest.raises(BadRequest) as by_server:
        read_instances(body, keys)
    assert str(by_server.value) == str(by_predictor.value)
    for word in words:
        assert word in str(by_predictor.value)


def test_serving_a_tflite_export_loads_no_tensorflow():
    # What serve.py runs for a TFLite export: its flags, the job, the server and the predictor.
    code = (
        "import sys\n"
        "import serve, jobs.serve_run, serving.predictor, serving.lite_predictor\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras'))\n"
        "assert not loaded, loaded[:5]\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
