"""cflow_ref: the PyTorch reference for every architecture in
docs/ARCHITECTURES.md, plus the fixture, trace and quantization-replay
generators that pin the Go runtime (see golden/README.md)."""
