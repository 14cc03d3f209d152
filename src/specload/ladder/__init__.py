"""What the rungs step, as pure plans: the ladder's rungs and their windows (`rungs.py`), and
the crossover search's coarse pass and refinement rounds (`search.py`)."""
