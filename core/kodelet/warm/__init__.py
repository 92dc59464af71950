"""The warm kodelet: one long-running process per project and user that keeps a loaded
runtime, so a guarded tool call costs milliseconds instead of a Python start-up.

:mod:`.client` is what an agent runs per hook (standard library only, never imports
kodelet unless it has to answer itself); :mod:`.server` is the warm kodelet;
:mod:`.fingerprint` tells it when what defines its runtime changed. docs/HOSTS.md
says how it starts, stops, reloads and fails.
"""
