"""Generated mutants for `tests/mutate --auto`: breaks nobody wrote by hand.

mutants.py    one site change (a Mutant) and the two generators: Python's `ast` over the
              analysis, a token rule set over the C++ sources;
selection.py  which tests judge a mutant of a given file (the analysis's import graph;
              a table from C++ source folders to cmake targets, ctest regexes and pytest files);
sample.py     the seeded sample: every site of the target files in a fixed order, shuffled by
              the seed, so mutant (seed, index) is the same change on the same tree.
The hand-written catalogue (tests/mutations/) and the runner: tests/mutate, docs/hardening.md.
"""
