import json
import os
import sys

GOLDEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if GOLDEN not in sys.path:
    sys.path.insert(0, GOLDEN)

import torch  # noqa: E402

torch.set_num_threads(1)


def fixture(name):
    from cflow_ref import generate
    return generate.fixture_dir(GOLDEN, name)


def trace_path(name, weights):
    from cflow_ref import generate
    return generate.trace_file(GOLDEN, name, weights)


def load_trace(name, weights):
    with open(trace_path(name, weights)) as f:
        return json.load(f)
