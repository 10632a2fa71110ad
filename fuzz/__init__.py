"""A fuzz harness for ferrox's Python API: random and adversarial calls of
every public function, method and operator, run in child processes so that
crashes and hangs are caught, counted and isolated to one replayable line,
with MLX as the reference for calls whose arguments are valid.

``python -m fuzz --help`` (or ``make fuzz``) runs it; ``reproducers.txt``
holds every call that ever crashed, panicked or hung, replayed by the test
suite.
"""
