"""Started with every script the tests run (tests.helpers.scripts.ENV puts this folder on
PYTHONPATH): the script sees the libraries of a user's install, not the test environment's.

Keras imports scikit-learn, SciPy, pandas and IPython at start-up whenever they are installed
(its scikit-learn wrappers, array slicing and file editor), and the test dependencies install
them: about 2.3 s of every runner's start that no user pays (measured: `import keras,
tensorflow` 6.9 s of CPU with them, 4.6 s without). None is in requirements.txt, so no script
may need one; a script that did would fail here as it would for a user.
"""

import sys

_TEST_ONLY = frozenset({"sklearn", "scipy", "pandas", "IPython"})


class _TestOnlyLibraries:
    """A meta-path finder that reports the test-only libraries as not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _TEST_ONLY:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _TestOnlyLibraries())
