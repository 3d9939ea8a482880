import json
import os
import sys

GOLDEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if GOLDEN not in sys.path:
    sys.path.insert(0, GOLDEN)

import torch  # noqa: E402

torch.set_num_threads(1)


def fixture(name):
    return os.path.join(GOLDEN, "fixtures", name)


def trace_path(name, weights):
    return os.path.join(GOLDEN, "traces", "%s_%s.json" % (name, weights))


def load_trace(name, weights):
    with open(trace_path(name, weights)) as f:
        return json.load(f)
