"""Helpers shared by the tests: running the command line and finding Chromium."""

import contextlib
import io
import os
import shutil
import subprocess
import sys

ANALYSIS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args, cwd=None):
    """Run `python -m fabscope_analysis ...` the way users do; returns CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ANALYSIS_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "fabscope_analysis", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def run_main(*args, cwd=None):
    """The same command as run_cli, inside this process: the command's own code without a
    new interpreter importing numpy, scipy and pandas again (about 1.5 s a call on a busy
    2-core machine). For tests that call many commands on one file; exit codes of the
    real process are run_cli's to test."""
    from fabscope_analysis.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            contextlib.chdir(cwd or os.getcwd()):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's errors and usage
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path, png_path, height=2400, timeout=90):
    """Render a page in headless Chromium; returns the CompletedProcess."""
    import tempfile
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={png_path}",
             f"--window-size=1280,{height}", "file://" + os.path.abspath(html_path)],
            capture_output=True, text=True, timeout=timeout)
