"""The scenario a user writes and every setting in it, each declared once (`settings.py`)
and validated with every problem named (`scenario.py`), and the API key's one resolution."""
