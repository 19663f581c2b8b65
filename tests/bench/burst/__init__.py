"""The burst benchmark's harness (tests/bench/bench_burst.py): the processes of the full stack
(stack.py), the fakes and the seeded data (scenario.py), the clients that load it (clients.py,
over tests/bench/wsclient.py) and the figures drawn from what they saw (figures.py, checks.py)."""
