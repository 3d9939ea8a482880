"""The delay scheduler's two queues, per decoded token.

DenseDelayLine: DelayedSum's dense FFN of layer ℓ+δd reads x_out(ℓ); the
decoder computes it as soon as x_out(ℓ) is final (the runtime's plan order)
and parks it here until layer ℓ+δd combines. Layers ℓ < δd read the zero vector.

ExpertQueue: expert outputs keyed by their injection (target) layer; popping
a target returns the outputs in the order their source layers ran.
"""


class DenseDelayLine:
    def __init__(self):
        self._ready = {}

    def put(self, layer, f):
        assert layer not in self._ready, "dense output of layer %d computed twice" % layer
        self._ready[layer] = f

    def take(self, layer):
        return self._ready.pop(layer)

    def empty(self):
        return not self._ready


class ExpertQueue:
    def __init__(self):
        self._q = []   # (target, source, vector)

    def push(self, target, source, vec):
        self._q.append((target, source, vec))

    def pop(self, target):
        """Outputs whose target is exactly `target`, in source order."""
        hit = [(s, v) for t, s, v in sorted(self._q, key=lambda e: e[1]) if t == target]
        self._q = [e for e in self._q if e[0] != target]
        return [v for _, v in hit]

    def pop_from(self, first_target):
        """Outputs whose target is ≥ first_target (arch4's overflow past the
        last layer), in source order."""
        hit = [(s, v) for t, s, v in sorted(self._q, key=lambda e: e[1]) if t >= first_target]
        self._q = [e for e in self._q if e[0] < first_target]
        return [v for _, v in hit]

    def empty(self):
        return not self._q
