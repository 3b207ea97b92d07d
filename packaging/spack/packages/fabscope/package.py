# Spack recipe for fabscope, in the style of Spack's own recipes for MPI
# benchmarks (osu-micro-benchmarks, nccl-tests). See docs/install.md ("Spack").
#
# fabscope has no published release tarball or public repository yet, so the
# recipe fetches from the git repository it lives in (this file sits at
# packaging/spack/packages/fabscope/ of a fabscope checkout): a copy of the
# recipe kept elsewhere sets `git` to the site's fabscope repository instead.

import os

from spack.package import *

try:  # Spack >= 1.0 keeps the build systems in its package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:  # Spack 0.x exports them from spack.package
    pass


class Fabscope(CMakePackage, CudaPackage):
    """Network-fabric test suite for LLM serving: point-to-point, all-pairs,
    incast, collective, KV-cache, MoE, front-end and fault tests over MPI, UCX,
    libibverbs or NCCL on every rank, every sample written to one HDF5 file,
    and a Python analysis that judges the fabric. Includes `fabscope quickcheck`,
    a node health check for Slurm's HealthCheckProgram or NHC."""

    git = "file://" + os.path.realpath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))

    license("BSD-3-Clause")

    version("main", branch="main")

    variant("ucx", default=True, description="Build the UCX transport")
    variant("verbs", default=True, description="Build the libibverbs (RDMA) transport")
    variant("nccl", default=False, description="Build the NCCL transport (GPU memory)")
    variant("python", default=True, description="Install the fabscope_analysis Python package")

    conflicts("+nccl", when="~cuda", msg="the NCCL transport needs +cuda")

    # Spack releases from 0.23 on also want depends_on("c"/"cxx", type="build"); the
    # Spack this recipe is checked with (0.23.0.dev0) does not know those packages.
    depends_on("cmake@3.20:", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("boost@1.71:+program_options")
    depends_on("yaml-cpp")
    depends_on("hwloc")
    depends_on("ucx", when="+ucx")
    depends_on("rdma-core", when="+verbs")
    depends_on("nccl", when="+nccl")
    depends_on("googletest", type="test")

    with when("+python"):
        extends("python")
        depends_on("python@3.9:", type=("build", "run"))
        depends_on("py-numpy", type="run")
        depends_on("py-pandas", type="run")
        depends_on("py-h5py", type="run")
        depends_on("py-pyyaml", type="run")
        depends_on("py-scipy", type="run")

    # The analysis package lands here (relative to the prefix), on every platform.
    python_dir = join_path("lib", "python3", "dist-packages")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("FABSCOPE_ENABLE_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define_from_variant("FABSCOPE_ENABLE_NCCL", "nccl"),
            self.define_from_variant("FABSCOPE_ENABLE_UCX", "ucx"),
            self.define_from_variant("FABSCOPE_ENABLE_VERBS", "verbs"),
            self.define_from_variant("FABSCOPE_INSTALL_PYTHON", "python"),
            self.define("FABSCOPE_PYTHON_DIR", self.python_dir),
            self.define("FABSCOPE_BUILD_TESTS", self.run_tests),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
        ]
        if spec.satisfies("+cuda"):
            cuda_arch = spec.variants["cuda_arch"].value
            if "none" not in cuda_arch:
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(cuda_arch)))
        return args

    def check(self):
        # The unit tests only: CMakePackage's default runs the build's `test` target,
        # which also holds the MPI and system tests (root, network namespaces, Slurm,
        # tens of minutes), not a build-time check.
        with working_dir(self.builder.build_directory):
            ctest("--label-regex", "^unit$", "--output-on-failure", "--timeout", "120")

    # The analysis' Python modules, by the name they are imported with.
    python_modules = {
        "py-numpy": "numpy",
        "py-pandas": "pandas",
        "py-h5py": "h5py",
        "py-pyyaml": "yaml",
        "py-scipy": "scipy",
    }

    def setup_run_environment(self, env):
        if self.spec.satisfies("+python"):
            env.prepend_path("PYTHONPATH", join_path(self.prefix, self.python_dir))
            for directory in self._external_python_module_dirs():
                env.append_path("PYTHONPATH", directory)
        env.set("FABSCOPE_SCENARIOS", join_path(self.prefix.share, "fabscope", "scenarios"))

    def _external_python_module_dirs(self):
        """Where the external Python interpreter imports the external py-* modules from.

        `spack load` puts Spack's python-venv (no system site-packages) first on PATH,
        and for an external py-* package Spack adds the site directory that sysconfig
        names: on Debian /usr/local/lib/python3.X/dist-packages, not
        /usr/lib/python3/dist-packages where Debian's python3-numpy and the others are.
        Without these directories `python3 -m fabscope_analysis` fails after a load."""
        modules = [m for dep, m in self.python_modules.items() if self.spec[dep].external]
        if not modules:
            return []
        # The interpreter itself: spec["python"] is the python-venv on Spack 0.22+.
        interpreter = next(d for d in self.spec.traverse() if d.name == "python")
        python = which("python3", path=interpreter.prefix.bin)
        if python is None:
            return []
        script = (
            "import importlib.util, os\n"
            "for name in %r:\n"
            "    found = importlib.util.find_spec(name)\n"
            "    if found and found.origin:\n"
            "        print(os.path.dirname(os.path.dirname(found.origin)))\n" % modules
        )
        found = python("-c", script, output=str, error=str, fail_on_error=False)
        return list(dict.fromkeys(line for line in found.split() if line))

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed_binary(self):
        fabscope = Executable(self.prefix.bin.fabscope)
        fabscope("--version")
        fabscope("list", "--scenario", join_path(self.prefix.share, "fabscope", "scenarios", "smoke.yaml"),
                 "--ranks", "2")
