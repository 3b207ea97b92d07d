"""Loaded by every Python a mapped test starts (linemap.py puts this folder first on
PYTHONPATH): the commands the tests run as `python -m fabscope_analysis ...` are traced
too, their lines given to the test file that started them (MUTATE_LINEMAP_TEST, set by
the plugin for the test's call), and written to MUTATE_LINEMAP_CHILDREN/<pid>.json at exit."""
import os

if os.environ.get("MUTATE_LINEMAP_CHILDREN") and os.environ.get("MUTATE_LINEMAP_PACKAGE"):
    import atexit
    import json
    import sys
    import threading

    _package = os.path.abspath(os.environ["MUTATE_LINEMAP_PACKAGE"]) + os.sep
    _who = os.environ.get("MUTATE_LINEMAP_TEST", "*")
    _hits = {}

    def _local(frame, event, arg):
        if event == "line":
            code = frame.f_code
            who = _who if code.co_flags & 0x0001 else "*"      # CO_OPTIMIZED: a function's frame
            _hits.setdefault(code.co_filename, {}).setdefault(frame.f_lineno, set()).add(who)
        return _local

    def _global(frame, event, arg):
        if frame.f_code.co_filename.startswith(_package):
            _local(frame, "line", arg)
            return _local
        return None

    def _write():
        sys.settrace(None)
        path = os.path.join(os.environ["MUTATE_LINEMAP_CHILDREN"], f"{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump({name: {str(line): sorted(who) for line, who in lines.items()}
                       for name, lines in _hits.items()}, f)

    sys.settrace(_global)
    threading.settrace(_global)
    atexit.register(_write)
