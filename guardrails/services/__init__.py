"""The guardrails' services, by what they serve: the checkpoint (checkpoint.py), an approval
request's decisions and status (approvals.py), running approved requests (execution.py), and
the policies (policies.py)."""
