"""What the load sends: request lengths and think times (`shapes.py`), prompt sets and their
fit to a context, conversations, the category mix, open-loop arrival times, and the
workload kinds (`kinds.py`) that each layer resolves."""
