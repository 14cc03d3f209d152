"""The sweep's stages, one module each: what each adds to the manifest before the runner's
next pass (`runner/loop.py` runs them in turn)."""
