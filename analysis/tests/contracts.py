"""The claim of a contract test on one row of the docs' outcome tables (command, exit code,
verdict word or closing line): tests/structure/check_outcome_contracts.py reads these
decorators and fails when a row has no test, two tests, or a test claims a row no table has."""


def outcome_contract(command: str, exit_code: int, outcome: str):
    """Marks a test as the contract of `command` exiting `exit_code` with `outcome`
    ("—": no verdict word); the test must assert both exactly."""
    def mark(test):
        test.outcome_contracts = getattr(test, "outcome_contracts", []) + [(command, exit_code, outcome)]
        return test
    return mark
