"""The analysis command line as parsed: every command's options with their defaults, and
its help text, held against the recorded expectation (expected_outputs.py: a change
detector; docs/analysis.md states the defaults, test_cli.py the behaviour)."""

import argparse

import pytest

from expected_outputs import check_expected, text_lines
from fabscope_analysis.cli import build_parser


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _minimal_args(command: str, p: argparse.ArgumentParser):
    """The command with a stand-in value for each required argument (its first choice, 1 for a typed one, else X)."""
    args = [command]
    for action in p._actions:
        value = str(sorted(action.choices)[0]) if action.choices else "1" if action.type else "X"
        if not action.option_strings:
            args.append(value)
        elif action.required:
            args += [action.option_strings[0], value]
    return args


@pytest.mark.parametrize("command", sorted(_commands()))
def test_command_line(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    p = _commands()[command]
    parsed = vars(build_parser().parse_args(_minimal_args(command, p)))
    parsed["func"] = getattr(parsed.get("func"), "__name__", None)
    check_expected("cli", command, {"parsed": parsed, "help": text_lines(p.format_help())})
