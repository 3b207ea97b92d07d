"""Helpers shared by the tests: running the command line and finding Chromium."""

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
