"""The hook command ``kodelet claude install`` writes: ``python -I -S .../hook.py claude
hook``. Python compiles a script on every run but a module once, so this stub only
imports the lean client (:mod:`.client`) from its compiled file and runs it."""

import sys

sys.path.insert(0, __file__.rpartition("/")[0])
import client  # type: ignore[import-not-found]

sys.exit(client.main(sys.argv[1:]))
