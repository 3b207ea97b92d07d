#!/usr/bin/python3
"""Prints the structure of a fabscope result file, not its values: every group,
every attribute (name and type class) and every dataset (its columns and their
types, or its rank for a plain array), one line each, sorted.

Used by tests/mpi/file_structure.sh to show that a refactoring wrote the same
layout as the reference in tests/data/structure/. Per-host groups (/hosts/<host>)
are named by a placeholder so the reference does not depend on the host name.
"""
import sys

import h5py


def type_name(dtype):
    if dtype.names:
        return "{" + ",".join(f"{n}:{type_name(dtype.fields[n][0])}" for n in dtype.names) + "}"
    if dtype.kind in "SOU":
        return "str"
    return dtype.str.lstrip("<>|=")


def attr_type(value):
    if isinstance(value, (bytes, str)):
        return "str"
    dtype = getattr(value, "dtype", None)
    return type_name(dtype) if dtype is not None else type(value).__name__


def main(path):
    lines = []
    with h5py.File(path, "r") as f:
        hosts = [h for h in f.get("hosts", {})]

        def anon(name):
            for i, host in enumerate(sorted(hosts)):
                name = name.replace(f"hosts/{host}", f"hosts/<host{i}>")
            return "/" + name if not name.startswith("/") else name

        def attrs(obj, where):
            for key in obj.attrs:
                lines.append(f"attr {where} {key}: {attr_type(obj.attrs[key])}")

        attrs(f, "/")

        def visit(name, obj):
            where = anon(name)
            if isinstance(obj, h5py.Group):
                lines.append(f"group {where}")
            else:
                shape = "table" if obj.dtype.names else f"array[{len(obj.shape)}]"
                lines.append(f"dataset {where} {shape} {type_name(obj.dtype)}")
            attrs(obj, where)

        f.visititems(visit)
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main(sys.argv[1])
