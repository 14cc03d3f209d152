"""Locustfile: closed-loop chat users whose count jumps from step to step.

    locust -f locustfiles/steps.py --headless --host http://127.0.0.1:8000 \
        --steps 4,128,4 --step-time 30 --csv out/run

Each count holds for --step-time seconds; the report gives, per step, how long tok/s
took to settle within 5% of its new steady level and the tokens the jump cost.
"""

from specload.loadgen.locustfile_steps import ChatStreamUser, StepShape

__all__ = ["ChatStreamUser", "StepShape"]
