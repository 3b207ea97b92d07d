"""Launchers read back: what launch/fabscope-mpirun, launch/slurm/fabscope.sbatch and
launch/fabscope-fit hand to mpirun/srun, for every preset and every documented option and
environment variable.

Each case runs the launcher twice against a fake host (sysfs tree, `ip`, `nvidia-smi`, an
emulated cluster's state file): once as a dry run, whose printed environment and command are
parsed, and once for real with mpirun/srun replaced by a stand-in that records the argument
vector and the environment it was given. Both must hold exactly the expected values; the
variables the stand-in saw changed are exactly the ones printed; every variable that is not
Open MPI's own (OMPI_MCA_*, read by the daemons themselves) is forwarded with `-x` (mpirun),
and srun gets `--export=ALL`. Precedence is read back as values: an option beats detection,
detection beats the fallback, `--env` beats the preset, the preset beats the caller's shell.

What must be covered is read from the sources themselves, so a new preset variable, a new
preset file, a new option in docs/launch.md or a `--help` text, or a new FABSCOPE_* variable
a launcher reads fails here until a case reads it back. No MPI job starts: dry runs and
stand-ins only (4 s of CPU; 6 s on a quiet 2-core machine, under 20 s on a loaded one)."""

import os
import re
import shlex
import stat
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.realpath(os.path.dirname(os.path.dirname(HERE)))
LAUNCH = os.path.join(REPO, "launch")
MPIRUN_WRAPPER = os.path.join(LAUNCH, "fabscope-mpirun")
SBATCH = os.path.join(LAUNCH, "slurm", "fabscope.sbatch")
FIT = os.path.join(LAUNCH, "fabscope-fit")
BIND_GPU = os.path.join(LAUNCH, "lib", "bind-gpu")
DOCS = os.path.join(REPO, "docs", "launch.md")
PRESET_DIR = os.path.join(LAUNCH, "presets")
SUBNET = "198.18.77.0/24"   # the fake emulated cluster's
RUN_ARGS = ["run", "--scenario", "s.yaml", "--output", "r.h5"]
# Set by bash itself or by the recorder's own process, not by a launcher.
SHELL_OWN = {"_", "SHLVL", "PWD", "OLDPWD"}


# --- what each preset must export (docs/launch.md, "Fabric presets") -----------------------

def ib_env(hca, traffic_class=None, iface=None):
    env = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": hca, "UCX_NET_DEVICES": hca,
           "OMPI_MCA_pml": "ucx", "OMPI_MCA_osc": "ucx", "OMPI_MCA_btl": "^openib"}
    if traffic_class is not None:
        env.update(NCCL_IB_TC=traffic_class, UCX_IB_TRAFFIC_CLASS=traffic_class)
    if iface is not None:
        env.update(NCCL_SOCKET_IFNAME=iface, OMPI_MCA_oob_tcp_if_include=iface)
    return env


def roce_env(hca, gid, traffic_class, iface=None):
    env = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": hca, "NCCL_IB_GID_INDEX": gid,
           "NCCL_IB_TC": traffic_class, "UCX_NET_DEVICES": hca, "UCX_IB_GID_INDEX": gid,
           "UCX_IB_TRAFFIC_CLASS": traffic_class, "OMPI_MCA_pml": "ucx", "OMPI_MCA_osc": "ucx",
           "OMPI_MCA_btl": "^openib", "OMPI_MCA_btl_openib_cpc_include": "rdmacm",
           "OMPI_MCA_btl_openib_gid_index": gid}
    if iface is not None:
        env.update(NCCL_SOCKET_IFNAME=iface, OMPI_MCA_oob_tcp_if_include=iface,
                   OMPI_MCA_btl_tcp_if_include=iface)
    return env


def tcp_env(iface):
    return {"NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket", "NCCL_SOCKET_IFNAME": iface,
            "UCX_TLS": "tcp,sm,self", "UCX_NET_DEVICES": iface, "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "tcp,vader,self", "OMPI_MCA_btl_tcp_if_include": iface,
            "OMPI_MCA_oob_tcp_if_include": iface}


def emulated_env(iface):
    return {"NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket", "NCCL_SOCKET_IFNAME": iface,
            "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": iface, "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "tcp,self", "OMPI_MCA_btl_tcp_if_include": SUBNET,
            "OMPI_MCA_oob_tcp_if_include": SUBNET, "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_MCA_plm_rsh_agent": os.path.join(LAUNCH, "emulated-cluster-rsh")}


# Per preset: (options of fabscope-mpirun, the same as sbatch environment, expected export).
# The first case of each preset is what it detects on the fake host, with nothing given.
PRESET_CASES = {
    "ib": [
        ([], {}, ib_env("mlx5_3:1")),
        (["--hca", "mlx5_7:2", "--traffic-class", "98", "--iface", "ib9"],
         {"FABSCOPE_HCA": "mlx5_7:2", "FABSCOPE_TRAFFIC_CLASS": "98", "FABSCOPE_IFACE": "ib9"},
         ib_env("mlx5_7:2", "98", "ib9")),
    ],
    "roce": [
        # detection: the ACTIVE Ethernet ports, the RoCE v2 IPv4 GID (5), 106, the HCA's netdev
        ([], {}, roce_env("mlx5_0:1,mlx5_1:1", "5", "106", "ens1f0np0")),
        (["--hca", "mlx5_9:2", "--gid-index", "7", "--traffic-class", "98", "--iface", "eth9"],
         {"FABSCOPE_HCA": "mlx5_9:2", "FABSCOPE_GID_INDEX": "7", "FABSCOPE_TRAFFIC_CLASS": "98",
          "FABSCOPE_IFACE": "eth9"},
         roce_env("mlx5_9:2", "7", "98", "eth9")),
        # a port without a RoCE v2 IPv4 GID and without a netdev: GID fallback 3, no interface
        (["--hca", "mlx5_1:1"], {"FABSCOPE_HCA": "mlx5_1:1"}, roce_env("mlx5_1:1", "3", "106")),
        # only the GID given: detection of the rest stays
        (["--gid-index", "0"], {"FABSCOPE_GID_INDEX": "0"},
         roce_env("mlx5_0:1,mlx5_1:1", "0", "106", "ens1f0np0")),
    ],
    "tcp": [
        ([], {}, tcp_env("enp9s0")),          # the fake default route's interface
        (["--iface", "eth7"], {"FABSCOPE_IFACE": "eth7"}, tcp_env("eth7")),
    ],
    "emulated": [
        ([], None, emulated_env("eth1")),      # sbatch refuses the emulated preset
        (["--iface", "eth5"], None, emulated_env("eth5")),
    ],
}
# The binding each preset chooses when none is given, as it reaches the command.
PRESET_DEFAULT_BIND = {"ib": "gpu", "roce": "gpu", "tcp": "core", "emulated": "none"}


# --- the fake host ------------------------------------------------------------------------

def _write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if mode:
        os.chmod(path, mode)


RECORDER = r"""#!/bin/bash
# Stands in for mpirun/srun: records what it was given, creates the result file a fit run
# names, and prints the result line a fault-tolerant launch waits for.
rec=${READBACK_RECORD:?}
printf '%s\0' "$(basename "$0")" "$@" > "$rec/argv"
env -0 > "$rec/env"
previous=""
for word in "$@"; do
  [[ $previous != --output ]] || echo result > "$word"
  previous=$word
done
echo "fabscope: result: exit code 0"
"""

PYTHON_STANDIN = r"""#!/bin/bash
# Stands in for FABSCOPE_PYTHON: records plan's and fit's arguments; plan writes a plan
# whose verdict line names fit's options, as the real one does.
rec=${READBACK_RECORD:?}
printf '%s\0' "$@" > "$rec/python-$3"
if [[ $3 == plan ]]; then
  previous=""
  for word in "$@"; do
    if [[ $previous == --output ]]; then
      echo "# The verdict: python3 -m fabscope_analysis fit RESULT.h5 --tp 8 --prompt 512" > "$word"
    elif [[ $previous == --calibration-probe ]]; then   # a probe with a GPU path's two copies
      printf -- '- name: cal-latency-many\n- name: cal-gpu-kv-push\n- name: cal-gpu-kv-push-more\n' > "$word"
    fi
    previous=$word
  done
fi
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """A fake host: two ACTIVE RoCE ports (mlx5_0 with netdev and GIDs), one down, one IB
    port; a default route on enp9s0; two GPUs; an emulated cluster rb0, rb1."""
    root = str(tmp_path_factory.mktemp("launch-read-back"))
    sysfs = os.path.join(root, "sys")
    for dev, layer, state in (("mlx5_0", "Ethernet", "4: ACTIVE"), ("mlx5_1", "Ethernet", "4: ACTIVE"),
                              ("mlx5_2", "Ethernet", "1: DOWN"), ("mlx5_3", "InfiniBand", "4: ACTIVE")):
        port = os.path.join(sysfs, "class", "infiniband", dev, "ports", "1")
        _write(os.path.join(port, "link_layer"), layer + "\n")
        _write(os.path.join(port, "state"), state + "\n")
    os.makedirs(os.path.join(sysfs, "class", "infiniband", "mlx5_0", "device", "net", "ens1f0np0"))
    gids = os.path.join(sysfs, "class", "infiniband", "mlx5_0", "ports", "1")
    for index in range(6):
        _write(os.path.join(gids, "gid_attrs", "types", str(index)),
               ("IB/RoCE v1" if index % 2 == 0 else "RoCE v2") + "\n")
        _write(os.path.join(gids, "gids", str(index)),
               ("0000:0000:0000:0000:0000:ffff:0a00:0001" if index in (4, 5)
                else "fe80:0000:0000:0000:0a88:66ff:fe01:0203") + "\n")
    bin_dir = os.path.join(root, "bin")
    gpu_bin_dir = os.path.join(root, "gpu-bin")
    executable = stat.S_IRWXU
    _write(os.path.join(bin_dir, "ip"), "#!/bin/sh\necho 'default via 192.0.2.1 dev enp9s0 proto static'\n",
           executable)
    _write(os.path.join(gpu_bin_dir, "nvidia-smi"),
           "#!/bin/sh\necho 'GPU 0: H200 (UUID: GPU-0)'\necho 'GPU 1: H200 (UUID: GPU-1)'\n", executable)
    for name in ("mpirun", "srun", "recorder"):
        _write(os.path.join(bin_dir, name), RECORDER, executable)
    _write(os.path.join(bin_dir, "python3-standin"), PYTHON_STANDIN, executable)
    state_dir = os.path.join(root, "cluster-state")
    os.makedirs(state_dir, mode=0o700)
    _write(os.path.join(state_dir, "rb.state"),
           f"version 1\nprefix rb\nsubnet {SUBNET}\nbridge rb-br 5 198.18.77.254/24\n"
           "host rb0 1 rb0-br 6 198.18.77.1/24\nhost rb1 2 rb1-br 7 198.18.77.2/24\n")
    # A checkout elsewhere, for FABSCOPE_SOURCE_DIR: the launch scripts through a link.
    source = os.path.join(root, "checkout")
    os.makedirs(source)
    os.symlink(LAUNCH, os.path.join(source, "launch"))
    record = os.path.join(root, "record")
    os.makedirs(record)
    return {"root": root, "sysfs": sysfs, "bin": bin_dir, "gpu_bin": gpu_bin_dir,
            "recorder": os.path.join(bin_dir, "recorder"), "python": os.path.join(bin_dir, "python3-standin"),
            "state": state_dir, "source": source, "record": record}


def base_env(host, gpus=True):
    """The launcher's whole environment: nothing from the test's own."""
    path = [host["bin"]] + ([host["gpu_bin"]] if gpus else []) + ["/usr/bin", "/bin"]
    return {"PATH": ":".join(path), "HOME": host["root"], "LC_ALL": "C",
            "FABSCOPE_SYSFS_ROOT": host["sysfs"], "FABSCOPE_DCB_TOOL": "/nonexistent/dcb",
            "FABSCOPE_CLUSTER_STATE_DIR": host["state"], "FABSCOPE_CLUSTER_PREFIX": "rb",
            "READBACK_RECORD": host["record"]}


# --- running and parsing ------------------------------------------------------------------

class Printed:
    """What a launcher printed: the environment block and the command."""

    def __init__(self, stdout):
        self.env_lines = []
        self.command = None
        lines = stdout.splitlines()
        for i, line in enumerate(lines):
            if line == "environment:":
                for entry in lines[i + 1:]:
                    if not entry.startswith("  export "):
                        break
                    (assignment,) = shlex.split(entry[len("  export "):])
                    self.env_lines.append(tuple(assignment.split("=", 1)))
            if line == "command:":
                self.command = shlex.split(lines[i + 1])
        assert self.command is not None, f"no 'command:' block in:\n{stdout}"
        names = [name for name, _ in self.env_lines]
        assert len(names) == len(set(names)), f"a variable printed twice: {names}"
        self.env = dict(self.env_lines)


class Launch:
    def __init__(self, done, printed, argv, env):
        self.done, self.printed, self.argv, self.env = done, printed, argv, env


def _read_record(host):
    argv_file = os.path.join(host["record"], "argv")
    if not os.path.exists(argv_file):
        return None, None
    with open(argv_file, "rb") as f:
        argv = f.read().decode().split("\0")[:-1]
    with open(os.path.join(host["record"], "env"), "rb") as f:
        env = dict(item.split("=", 1) for item in f.read().decode().split("\0") if "=" in item)
    return argv, env


def _clear_record(host):
    for name in os.listdir(host["record"]):
        os.unlink(os.path.join(host["record"], name))


def run(command, env, cwd=None):
    """Runs in the fake host's folder (HOME) unless told otherwise: the stand-ins write the
    result file a command line names, and a relative one must not land in the checkout."""
    return subprocess.run(command, env=env, cwd=cwd or env["HOME"], capture_output=True, text=True,
                          timeout=60, check=False)


def launch_twice(host, command, env, dry_run_env=None, dry_run_args=None, cwd=None):
    """Runs COMMAND as a dry run, then for real against the recording stand-ins; returns what
    both saw after checking that the dry run started nothing and printed what the real run
    handed over."""
    _clear_record(host)
    dry = run(dry_run_args(command) if dry_run_args else command, {**env, **(dry_run_env or {})}, cwd)
    assert dry.returncode == 0, f"dry run {command} exited {dry.returncode}: {dry.stderr}"
    assert _read_record(host) == (None, None), f"dry run {command} started the launcher"
    printed = Printed(dry.stdout)
    done = run(command, env, cwd)
    assert done.returncode == 0, f"{command} exited {done.returncode}: {done.stderr}"
    argv, real_env = _read_record(host)
    assert argv is not None, f"{command} started nothing:\n{done.stdout}"
    real_printed = Printed(done.stdout)
    assert real_printed.env_lines == printed.env_lines and real_printed.command == printed.command, \
        f"the dry run printed another environment or command than the run:\n{dry.stdout}\n---\n{done.stdout}"
    assert argv[1:] == printed.command[1:] and os.path.basename(printed.command[0]) == argv[0], \
        f"printed command {printed.command} is not what the launcher started: {argv}"
    return Launch(done, printed, argv, real_env)


def assert_exported(launch, env, expected, forwarding, also_changed=None):
    """The printed environment is EXPECTED exactly; the started command's environment holds
    those values and changes nothing else (ALSO_CHANGED: what the wrapper itself sets, not
    printed); FORWARDING is "mpirun" (-x NAME for all but OMPI_MCA_*) or "srun"."""
    assert launch.printed.env == expected, \
        f"printed environment differs:\n  missing/wrong: " \
        f"{ {k: v for k, v in expected.items() if launch.printed.env.get(k) != v} }\n  " \
        f"unexpected: { {k: v for k, v in launch.printed.env.items() if k not in expected} }"
    changed = {k: v for k, v in launch.env.items() if env.get(k) != v and k not in SHELL_OWN}
    assert all(launch.env.get(k) == v for k, v in expected.items()) and \
        changed == {k: v for k, v in {**expected, **(also_changed or {})}.items() if env.get(k) != v}, \
        f"the started command's environment differs from the printed one: {changed}"
    command = launch.argv
    forwarded = [command[i + 1] for i, word in enumerate(command[:-1]) if word == "-x"]
    if forwarding == "mpirun":
        want = sorted(name for name in expected if not name.startswith("OMPI_MCA_"))
        assert sorted(forwarded) == want, f"-x forwards {sorted(forwarded)}, expected {want}"
    else:
        assert forwarded == [] and "--export=ALL" in command[1:command.index("--kill-on-bad-exit=1")], \
            f"srun must get --export=ALL (and no -x): {command}"


def mpirun_command(host, options, run_args=RUN_ARGS, bin_="/bin/true"):
    return [MPIRUN_WRAPPER, "--mpirun", host["recorder"], "--bin", bin_] + options + ["--"] + run_args


def mpirun_dry(command):
    return [command[0], "--dry-run"] + command[1:]


def launch_mpirun(host, options, env=None, **kwargs):
    env = env or base_env(host)
    return launch_twice(host, mpirun_command(host, options, **kwargs), env, dry_run_args=mpirun_dry), env


def sbatch_env(host, extra, gpus=True):
    submit = os.path.join(host["root"], "submit")
    os.makedirs(submit, exist_ok=True)
    return {**base_env(host, gpus), "SLURM_JOB_ID": "4242", "SLURM_NTASKS": "4", "SLURM_SUBMIT_DIR": submit,
            "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "n[1-2]", "FABSCOPE_SOURCE_DIR": REPO,
            "FABSCOPE_BIN": "/bin/true", **extra}


def launch_sbatch(host, extra, args=("run", "--scenario", "s.yaml"), gpus=True):
    env = sbatch_env(host, extra, gpus)
    return launch_twice(host, ["bash", SBATCH] + list(args), env, dry_run_env={"FABSCOPE_DRY_RUN": "1"},
                        cwd=env["SLURM_SUBMIT_DIR"]), env


def slice_after(command, word):
    return command[command.index(word):]


# --- fabscope-mpirun ---------------------------------------------------------------------

@pytest.mark.parametrize("preset", sorted(PRESET_CASES))
def test_mpirun_exports_every_preset_variable_with_its_value(host, preset):
    for options, _, expected in PRESET_CASES[preset]:
        hosts = [] if preset == "emulated" else ["--hosts", "a,b"]
        launch, env = launch_mpirun(host, ["--fabric", preset] + hosts + options)
        assert_exported(launch, env, {**expected, "FABSCOPE_FABRIC": preset}, "mpirun")
        command = launch.argv
        bind = PRESET_DEFAULT_BIND[preset]
        if bind == "gpu":   # one rank per GPU: nvidia-smi counts 2
            assert slice_after(command, "--host")[:7] == ["--host", "a:2,b:2", "--map-by", "ppr:2:node",
                                                          "-np", "4", "--bind-to"]
            assert command[command.index("--bind-to") + 1] == "none"
            assert command[-len(RUN_ARGS) - 2:-len(RUN_ARGS)] == [BIND_GPU, "/bin/true"]
        else:
            assert command[command.index("--bind-to") + 1] == bind
            assert BIND_GPU not in command and command[-len(RUN_ARGS) - 1] == "/bin/true"
        if preset == "emulated":   # the emulated cluster's hosts, one rank each
            assert slice_after(command, "--host")[:4] == ["--host", "rb0:1,rb1:1", "-np", "2"]


def test_mpirun_env_beats_the_preset_and_the_options(host):
    launch, env = launch_mpirun(host, ["--fabric", "roce", "--hosts", "a", "--bind", "none", "--hca", "mlx5_9:2",
                                       "--env", "NCCL_IB_HCA=mlx5_5:1", "--env", "OMPI_MCA_pml=ob1",
                                       "--env", "NCCL_DEBUG=WARN", "--env", "NCCL_DEBUG=INFO",
                                       "--env", "UCX_LOG_LEVEL=a b'c"])
    expected = roce_env("mlx5_9:2", "5", "106")   # mlx5_9 is not in sysfs: no GID, no netdev
    expected["NCCL_IB_GID_INDEX"] = expected["UCX_IB_GID_INDEX"] = expected["OMPI_MCA_btl_openib_gid_index"] = "3"
    expected.update(NCCL_IB_HCA="mlx5_5:1", OMPI_MCA_pml="ob1", NCCL_DEBUG="INFO", UCX_LOG_LEVEL="a b'c",
                    FABSCOPE_FABRIC="roce")
    assert_exported(launch, env, expected, "mpirun")


def test_mpirun_preset_beats_the_callers_shell(host):
    env = {**base_env(host), "NCCL_IB_HCA": "from-shell", "OMPI_MCA_pml": "ob1", "NCCL_NET": "Socket"}
    launch, _ = launch_mpirun(host, ["--fabric", "ib", "--hosts", "a", "-N", "1"], env=env)
    assert_exported(launch, env, {**ib_env("mlx5_3:1"), "FABSCOPE_FABRIC": "ib"}, "mpirun")
    # what the preset does not set is the caller's, passed on untouched and not forwarded
    assert launch.env["NCCL_NET"] == "Socket" and "NCCL_NET" not in launch.argv


def test_mpirun_without_a_fabric_exports_only_what_is_given(host):
    launch, env = launch_mpirun(host, ["--hosts", "a", "--env", "FOO=bar"])
    assert_exported(launch, env, {"FOO": "bar"}, "mpirun")
    assert launch.argv[1:6] == ["--host", "a:1", "-np", "1", "--bind-to"] and launch.argv[6] == "none"


def test_mpirun_binding_option_beats_the_preset_default(host):
    launch, _ = launch_mpirun(host, ["--fabric", "roce", "--hosts", "a", "--bind", "core"])
    assert launch.argv[1:6] == ["--host", "a:1", "-np", "1", "--bind-to"] and launch.argv[6] == "core"
    assert BIND_GPU not in launch.argv
    launch, _ = launch_mpirun(host, ["--fabric", "tcp", "--hosts", "a,b", "--bind", "gpu", "--gpus-per-node", "4"])
    assert launch.argv[1:9] == ["--host", "a:4,b:4", "--map-by", "ppr:4:node", "-np", "8", "--bind-to", "none"]
    assert launch.argv[-len(RUN_ARGS) - 2] == BIND_GPU
    # -N beats the GPU count; -np beats hosts x ranks per node
    launch, _ = launch_mpirun(host, ["--fabric", "ib", "--hosts", "a,b,c", "-N", "3", "-np", "5"])
    assert launch.argv[1:9] == ["--host", "a:3,b:3,c:3", "--map-by", "ppr:3:node", "-np", "5", "--bind-to", "none"]


def test_mpirun_hosts_ranks_mca_binary_and_mpirun(host):
    hostfile = os.path.join(host["root"], "hosts")
    _write(hostfile, "n1 slots=8\n# a comment\n\nn2 slots=8\n")
    for spelling in ("-N", "--ranks-per-node"):
        launch, _ = launch_mpirun(host, ["--hostfile", hostfile, spelling, "3", "--bind", "core",
                                         "--mca", "btl_tcp_links", "2"])
        assert launch.argv[1:] == ["--hostfile", hostfile, "--map-by", "ppr:3:node", "-np", "6", "--bind-to", "core",
                                   "--mca", "btl_tcp_links", "2", "/bin/true"] + RUN_ARGS
    for spelling in ("-np", "-n", "--np"):
        launch, _ = launch_mpirun(host, [spelling, "5"])
        assert launch.argv[1:] == ["-np", "5", "--bind-to", "none", "/bin/true"] + RUN_ARGS
    # the binary: --bin beats FABSCOPE_BIN, which beats build/fabscope
    env = {**base_env(host), "FABSCOPE_BIN": "/bin/echo"}
    command = [MPIRUN_WRAPPER, "--mpirun", host["recorder"], "--hosts", "a", "--"] + RUN_ARGS
    launch = launch_twice(host, command, env, dry_run_args=mpirun_dry)
    assert launch.argv[-len(RUN_ARGS) - 1] == "/bin/echo"
    launch = launch_twice(host, command[:3] + ["--bin", "/bin/true"] + command[3:], env, dry_run_args=mpirun_dry)
    assert launch.argv[-len(RUN_ARGS) - 1] == "/bin/true"
    # --mpirun: the printed and started command's first word (launch_twice compares them)
    assert launch.printed.command[0] == host["recorder"]


GRACE_LINE = "exit code: rank 0's result line; mpirun is ended {} s after it if still running"


def test_mpirun_fault_tolerant_exports_and_forwards_the_result_line_request(host):
    launch, env = launch_mpirun(host, ["--fabric", "tcp", "--hosts", "a", "--fault-tolerant"])
    assert_exported(launch, env, {**tcp_env("enp9s0"), "FABSCOPE_FABRIC": "tcp", "FABSCOPE_REPORT_EXIT": "1"},
                    "mpirun")
    assert slice_after(launch.argv, "--mca")[:3] == ["--mca", "orte_abort_on_non_zero_status", "0"]
    assert GRACE_LINE.format(40) in launch.done.stdout.splitlines()
    launch, env = launch_mpirun(host, ["--hosts", "a", "--fault-tolerant"],
                                env={**base_env(host), "FABSCOPE_RESULT_GRACE_S": "7"})
    assert GRACE_LINE.format(7) in launch.done.stdout.splitlines()
    launch, env = launch_mpirun(host, ["--fabric", "tcp", "--hosts", "a"])
    assert "FABSCOPE_REPORT_EXIT" not in launch.env and "orte_abort_on_non_zero_status" not in launch.argv
    assert "exit code:" not in launch.done.stdout


MPIRUN_REFUSALS = [
    (["--fabric", "myrinet"],
     r"unknown fabric 'myrinet' \(no .*/launch/presets/myrinet\.env\); known: emulated ib roce tcp"),
    (["--bind", "socket"], "--bind must be gpu, core or none, got 'socket'"),
    (["--gid-index", "x"], "--gid-index must be a non-negative integer, got 'x'"),
    (["--traffic-class", "256"], r"--traffic-class must be an integer 0\.\.255, got '256'"),
    (["--traffic-class", "-1"], r"--traffic-class must be an integer 0\.\.255, got '-1'"),
    (["-N", "0"], "--ranks-per-node must be a positive integer, got '0'"),
    (["-np", "two"], "--np must be a positive integer, got 'two'"),
    (["--gpus-per-node", "x"], "--gpus-per-node must be a positive integer, got 'x'"),
    (["--env", "NCCL_DEBUG"], "--env needs NAME=VALUE, got 'NCCL_DEBUG'"),
    (["--env", "1X=2"], "bad variable name '1X'"),
    (["--hosts", "a", "--hostfile", "/dev/null"], "give --hostfile or --hosts, not both"),
    (["--hostfile", "/nonexistent/hosts"], "hostfile '/nonexistent/hosts' is not readable"),
    (["--bin", "/nonexistent/fabscope"], "fabscope binary '/nonexistent/fabscope' is not executable"),
    (["--fabric", "emulated", "--env", "X=1"], None),   # no cluster of this prefix: see below
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--fault-tolerant"], None),   # FABSCOPE_RESULT_GRACE_S=0 in the environment: below
]


@pytest.mark.parametrize("options,message", MPIRUN_REFUSALS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_mpirun_refuses_bad_values_with_exit_2_naming_what_was_expected(host, options, message):
    env = base_env(host)
    if message is None and "--fault-tolerant" in options:
        env["FABSCOPE_RESULT_GRACE_S"] = "0"
        message = "FABSCOPE_RESULT_GRACE_S must be a whole number of seconds from 1 to 999999, got '0'"
    elif message is None:
        env["FABSCOPE_CLUSTER_PREFIX"] = "nosuch"
        message = "emulated: no emulated cluster is up"
    _clear_record(host)
    done = run(mpirun_dry([MPIRUN_WRAPPER, "--mpirun", host["recorder"], "--bin", "/bin/true"] + options
                          + ["--"] + RUN_ARGS), env)
    assert done.returncode == 2 and re.search(message, done.stderr), (done.returncode, done.stderr)
    assert "command:" not in done.stdout and _read_record(host) == (None, None)
    for needs_value in ("--hca", "--gid-index", "--traffic-class", "--iface", "--env", "--fabric", "--bin"):
        done = run([MPIRUN_WRAPPER, needs_value], env)
        assert done.returncode == 2 and f"{needs_value} needs a value" in done.stderr, done.stderr


# --- the sbatch script ---------------------------------------------------------------------

@pytest.mark.parametrize("preset", sorted(p for p in PRESET_CASES if p != "emulated"))
def test_sbatch_exports_every_preset_variable_with_its_value(host, preset):
    for _, sbatch_inputs, expected in PRESET_CASES[preset]:
        launch, env = launch_sbatch(host, {"FABSCOPE_FABRIC": preset, **sbatch_inputs})
        assert_exported(launch, env, {**expected, "FABSCOPE_FABRIC": preset}, "srun")
        # GPUs on this node (the fake nvidia-smi lists 2): bind-gpu; no output given: the job's file
        assert launch.argv == ["srun", "--mpi=pmix", "--export=ALL", "--cpu-bind=none", "--kill-on-bad-exit=1",
                               BIND_GPU, "/bin/true", "run", "--scenario", "s.yaml",
                               "--output", os.path.join(env["SLURM_SUBMIT_DIR"], "fabscope-4242.h5")]


def test_sbatch_preset_beats_the_submitting_shell(host):
    launch, env = launch_sbatch(host, {"FABSCOPE_FABRIC": "tcp", "NCCL_SOCKET_IFNAME": "from-shell",
                                       "UCX_TLS": "rc"})
    assert_exported(launch, env, {**tcp_env("enp9s0"), "FABSCOPE_FABRIC": "tcp"}, "srun")


def test_sbatch_binding_binary_source_and_output(host):
    for bind, srun_word in (("core", "--cpu-bind=cores"), ("none", "--cpu-bind=none"), ("", "--cpu-bind=none")):
        extra = {"FABSCOPE_BIND": bind} if bind else {}
        launch, env = launch_sbatch(host, extra, gpus=bind != "")   # default without GPUs: none
        assert launch.argv[3] == srun_word and BIND_GPU not in launch.argv, (bind, launch.argv)
        assert_exported(launch, env, {}, "srun")
    launch, env = launch_sbatch(host, {"FABSCOPE_BIND": "gpu"}, gpus=False)   # given: kept
    assert launch.argv[3:6] == ["--cpu-bind=none", "--kill-on-bad-exit=1", BIND_GPU]
    # FABSCOPE_BIN and FABSCOPE_SOURCE_DIR: the binary, bind-gpu and the default scenario
    launch, env = launch_sbatch(host, {"FABSCOPE_BIN": "/bin/echo", "FABSCOPE_SOURCE_DIR": host["source"]}, args=())
    assert launch.argv[5:] == [os.path.join(host["source"], "launch", "lib", "bind-gpu"), "/bin/echo", "run",
                               "--scenario", os.path.join(host["source"], "scenarios", "smoke.yaml"),
                               "--output", os.path.join(env["SLURM_SUBMIT_DIR"], "fabscope-4242.h5")]
    # arguments other than run are passed as they are
    launch, env = launch_sbatch(host, {}, args=("list", "--scenario", "s.yaml"))
    assert launch.argv[-4:] == ["/bin/true", "list", "--scenario", "s.yaml"]


def test_sbatch_fault_tolerant_runs_mpirun_forwarding_the_preset(host):
    launch, env = launch_sbatch(host, {"FABSCOPE_FABRIC": "roce", "FABSCOPE_FAULT_TOLERANT": "1",
                                       "FABSCOPE_BIND": "core"})
    assert_exported(launch, env, {**roce_env("mlx5_0:1,mlx5_1:1", "5", "106", "ens1f0np0"),
                                  "FABSCOPE_FABRIC": "roce", "FABSCOPE_REPORT_EXIT": "1"}, "mpirun")
    assert launch.argv[:7] == ["mpirun", "-np", "4", "--mca", "orte_abort_on_non_zero_status", "0", "--bind-to"]
    assert launch.argv[7] == "core"
    assert GRACE_LINE.format(40) in launch.done.stdout.splitlines()
    launch, env = launch_sbatch(host, {"FABSCOPE_FAULT_TOLERANT": "1", "FABSCOPE_RESULT_GRACE_S": "9"})
    assert GRACE_LINE.format(9) in launch.done.stdout.splitlines()
    launch, env = launch_sbatch(host, {"FABSCOPE_FABRIC": "tcp", "FABSCOPE_FAULT_TOLERANT": "0"})
    assert launch.argv[0] == "srun" and "FABSCOPE_REPORT_EXIT" not in launch.env


def test_sbatch_dry_run_outside_a_job(host):
    env = sbatch_env(host, {"FABSCOPE_DRY_RUN": "1", "FABSCOPE_FABRIC": "tcp", "FABSCOPE_IFACE": "eth3"})
    for name in ("SLURM_JOB_ID", "SLURM_SUBMIT_DIR", "FABSCOPE_SOURCE_DIR"):
        del env[name]
    _clear_record(host)
    done = run(["bash", SBATCH, "run", "-s", "s.yaml"], env, cwd=host["root"])
    assert done.returncode == 0, done.stderr
    printed = Printed(done.stdout)
    assert printed.env == {**tcp_env("eth3"), "FABSCOPE_FABRIC": "tcp"}
    # this checkout's bind-gpu; the job id, not known yet, reads JOBID
    assert printed.command[4:] == ["--kill-on-bad-exit=1", BIND_GPU, "/bin/true", "run", "-s", "s.yaml",
                                   "--output", os.path.join(host["root"], "fabscope-JOBID.h5")]
    assert _read_record(host) == (None, None)


SBATCH_REFUSALS = [
    ({"FABSCOPE_FABRIC": "myrinet"}, "unknown fabric 'myrinet' .*known: emulated ib roce tcp"),
    ({"FABSCOPE_FABRIC": "emulated"}, "the emulated preset is for launch/fabscope-mpirun"),
    ({"FABSCOPE_BIND": "socket"}, "FABSCOPE_BIND must be gpu, core or none, got 'socket'"),
    ({"FABSCOPE_GID_INDEX": "x"}, "FABSCOPE_GID_INDEX must be a non-negative integer, got 'x'"),
    ({"FABSCOPE_TRAFFIC_CLASS": "300"}, r"FABSCOPE_TRAFFIC_CLASS must be an integer 0\.\.255, got '300'"),
    ({"FABSCOPE_FAULT_TOLERANT": "yes"}, "FABSCOPE_FAULT_TOLERANT must be 0 or 1, got 'yes'"),
    ({"FABSCOPE_DRY_RUN": "yes"}, "FABSCOPE_DRY_RUN must be 0 or 1, got 'yes'"),
    ({"FABSCOPE_BIN": "/nonexistent/fabscope"}, "fabscope binary '/nonexistent/fabscope' is not executable"),
    ({"FABSCOPE_SOURCE_DIR": "/nonexistent"}, "FABSCOPE_SOURCE_DIR=/nonexistent is not a fabscope checkout"),
    ({"SLURM_JOB_ID": ""}, "not inside a Slurm job"),
    ({"FABSCOPE_FAULT_TOLERANT": "1", "FABSCOPE_RESULT_GRACE_S": "40s"},
     "FABSCOPE_RESULT_GRACE_S must be a whole number of seconds from 1 to 999999, got '40s'"),
]


@pytest.mark.parametrize("extra,message", SBATCH_REFUSALS, ids=lambda v: ",".join(v) if isinstance(v, dict) else "")
def test_sbatch_refuses_bad_values_with_exit_2_naming_what_was_expected(host, extra, message):
    _clear_record(host)
    env = {k: v for k, v in sbatch_env(host, extra).items() if v != ""}
    done = run(["bash", SBATCH, "run", "-s", "s.yaml"], env, cwd=env.get("SLURM_SUBMIT_DIR", host["root"]))
    assert done.returncode == 2 and re.search(message, done.stderr), (done.returncode, done.stderr)
    assert _read_record(host) == (None, None)


# --- fabscope-fit -------------------------------------------------------------------------

def _fit_usage_paragraphs():
    return re.split(r"\n\s*\n", _help(FIT))


def fit_plan_options():
    """Every option of fit's PLAN_OPTIONS paragraph with a value: the ones fit reads itself
    (--model, --ranks, --ranks-per-node, --topology) with theirs, the others with '1'."""
    (paragraph,) = [p.split("LAUNCH_OPTIONS:")[0] for p in _fit_usage_paragraphs() if p.startswith("PLAN_OPTIONS:")]
    own = {"--model": "llama3-70b", "--ranks": "4", "--ranks-per-node": "2", "--topology": "topo.yaml"}
    words = []
    for option in dict.fromkeys(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", paragraph)):
        words += [option, own.get(option, "1")]
    return words


def fit_command(host, directory, *launch_options, srun=False, calibrate=False):
    return ([FIT, "--dir", directory] + (["--srun"] if srun else [])
            + ([] if calibrate else ["--no-calibrate"])
            + ["--set", "all-pairs-bandwidth.window=4"] + fit_plan_options() + ["--"] + list(launch_options))


def fit_env(host):
    return {**base_env(host), "FABSCOPE_BIN": "/bin/true", "FABSCOPE_PYTHON": host["python"]}


def test_fit_hands_plan_run_and_fit_their_options(host):
    directory = os.path.join(host["root"], "fit")
    env = fit_env(host)
    command = fit_command(host, directory, "--fabric", "tcp", "--iface", "eth7", "--hosts", "a,b",
                          "--mpirun", host["recorder"])
    launch = launch_twice(host, command, env, dry_run_args=lambda c: c[:1] + ["--dry-run"] + c[1:])
    with open(os.path.join(host["record"], "python-plan"), "rb") as f:
        plan_argv = f.read().decode().split("\0")[:-1]
    # every plan option as given, then the binary and the plan's place
    assert plan_argv == ["-m", "fabscope_analysis", "plan"] + fit_plan_options() + [
        "--fabscope", "/bin/true", "--output", os.path.join(directory, "plan.yaml")]
    assert {"--model", "--ranks", "--slo", "--budget", "--topology"} <= set(plan_argv)
    # the source tree's analysis package: the one the wrapper exports for plan and fit
    assert_exported(launch, env, {**tcp_env("eth7"), "FABSCOPE_FABRIC": "tcp"}, "mpirun",
                    also_changed={"PYTHONPATH": os.path.join(REPO, "analysis")})
    assert launch.argv[1:] == ["--host", "a:2,b:2", "--map-by", "ppr:2:node", "-np", "4", "--bind-to", "core"] + [
        word for name in sorted(launch.printed.env, key=list(launch.printed.env).index)
        if not name.startswith("OMPI_MCA_") for word in ("-x", name)] + [
        "/bin/true", "run", "--scenario", os.path.join(directory, "plan.yaml"),
        "--output", os.path.join(directory, "result.h5"), "--set", "all-pairs-bandwidth.window=4",
        "--topology", "topo.yaml"]
    with open(os.path.join(host["record"], "python-fit"), "rb") as f:
        fit_argv = f.read().decode().split("\0")[:-1]
    assert fit_argv == ["-m", "fabscope_analysis", "fit", os.path.join(directory, "result.h5"), "--tp", "8",
                        "--prompt", "512", "--json", os.path.join(directory, "fit.json")]


def test_fit_with_srun_passes_the_launch_options_to_srun(host):
    directory = os.path.join(host["root"], "fit-srun")
    env = fit_env(host)
    command = fit_command(host, directory, "--partition", "gpu", srun=True)
    _clear_record(host)
    dry = run(command[:1] + ["--dry-run"] + command[1:], env)
    assert dry.returncode == 0, dry.stderr
    expected = ["srun", "-n", "4", "--ntasks-per-node", "2", "--partition", "gpu", "/bin/true", "run",
                "--scenario", os.path.join(directory, "plan.yaml"), "--output", os.path.join(directory, "result.h5"),
                "--set", "all-pairs-bandwidth.window=4", "--topology", "topo.yaml"]
    assert f"run: {' '.join(expected)}" in dry.stdout.splitlines()
    assert _read_record(host) == (None, None)
    done = run(command, env)
    assert done.returncode == 0, done.stderr
    argv, _ = _read_record(host)
    assert argv == expected


def test_fit_never_judges_an_earlier_runs_result(host, tmp_path):
    """A run that refuses its arguments or scenario (exit 2) writes nothing: fabscope-fit
    exits 2 with no verdict, and the result and verdict an earlier run left in DIR are
    removed before the run, never judged as this one's."""
    directory = os.path.join(host["root"], "fit-again")
    for name in ("result.h5", "fit.json"):
        _write(os.path.join(directory, name), "an earlier run\n")
    refusing = str(tmp_path / "bin")
    _write(os.path.join(refusing, "srun"),
           "#!/bin/sh\necho 'fabscope: error: plan.yaml:3:5: unknown key' >&2\nexit 2\n", stat.S_IRWXU)
    env = fit_env(host)
    env["PATH"] = f"{refusing}:{env['PATH']}"
    _clear_record(host)
    done = run(fit_command(host, directory, srun=True), env)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "refused its arguments or scenario (exit 2): nothing measured, no verdict" in done.stderr
    assert f"removing {directory}/result.h5 and {directory}/fit.json of an earlier run" in done.stdout
    assert not os.path.exists(os.path.join(directory, "result.h5"))
    assert not os.path.exists(os.path.join(directory, "fit.json"))
    assert not os.path.exists(os.path.join(host["record"], "python-fit"))


def test_fit_calibrates_on_the_cluster_first_and_plans_from_the_probe(host, tmp_path):
    """Without --no-calibrate: plan writes the probe, the launcher runs it with the run's
    ranks, and the plan is made from its result and the launch's wall time; a probe that
    writes no result gets no plan (exit 2)."""
    directory = os.path.join(host["root"], "fit-calibrated")
    launches = tmp_path / "launches"
    fake = str(tmp_path / "bin")
    # srun standing in for the cluster: records each launch, writes the file it is given
    _write(os.path.join(fake, "srun"), f"""#!/bin/bash
printf '%s ' "$@" >> {launches}; echo >> {launches}
previous=""
for word in "$@"; do [[ $previous == --output ]] && echo probe > "$word"; previous=$word; done
""", stat.S_IRWXU)
    env = fit_env(host)
    env["PATH"] = f"{fake}:{env['PATH']}"
    _clear_record(host)
    command = fit_command(host, directory, srun=True, calibrate=True)
    command[1:1] = ["--set", "kv-push.transport=mpi"]
    done = run(command, env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    probe, main = launches.read_text().splitlines()
    assert probe.startswith("-n 4 --ntasks-per-node 2 /bin/true run --scenario "
                            f"{directory}/calibrate.yaml --output {directory}/calibrate.h5 ")
    # an override of a planned test reaches the probe's GPU path copies of it, and only those
    assert probe.split(" --no-progress ")[1].split(" --topology ")[0].split() == [
        "--set", "cal-gpu-kv-push.transport=mpi", "--set", "cal-gpu-kv-push-again.transport=mpi",
        "--set", "cal-gpu-kv-push-more.transport=mpi"], probe
    assert "--set kv-push.transport=mpi --set all-pairs-bandwidth.window=4" in main, main
    assert f"--scenario {directory}/plan.yaml --output {directory}/result.h5" in main
    with open(os.path.join(host["record"], "python-plan"), "rb") as f:
        plan_argv = f.read().decode().split("\0")[:-1]
    calibration = plan_argv.index("--calibration")
    assert plan_argv[calibration + 1] == f"{directory}/calibrate.h5"
    assert plan_argv[calibration + 2] == "--calibration-wall" and float(plan_argv[calibration + 3]) >= 0
    assert "calibrate: the probe took" in done.stdout and "the run took" in done.stdout
    # a probe that writes nothing: no plan, exit 2
    _write(os.path.join(fake, "srun"), "#!/bin/sh\nexit 0\n", stat.S_IRWXU)
    _clear_record(host)
    done = run(fit_command(host, directory, srun=True, calibrate=True), env)
    assert done.returncode == 2 and "the calibration probe failed" in done.stderr, done.stderr
    last_plan = open(os.path.join(host["record"], "python-plan"), "rb").read().decode().split("\0")
    assert "--calibration-probe" in last_plan and "--calibration" not in last_plan   # the probe only


FIT_REFUSALS = [
    (["--dir"], {}, "--dir needs a directory"),
    (["--set"], {}, "--set needs KEY=VALUE"),
    (["--set", "window"], {}, "--set needs KEY=VALUE, got 'window'"),
    (["--ranks", "4"], {}, "--model and --ranks are required"),
    (["--model", "m", "--ranks", "4"], {"FABSCOPE_PYTHON": "/nonexistent/python3"},
     "FABSCOPE_PYTHON: '/nonexistent/python3' is not an executable python3"),
    (["--dry-run", "--model", "m", "--ranks", "4", "--", "--fabric", "myrinet"], {},
     "unknown fabric 'myrinet'"),
    (["--dry-run", "--model", "m", "--ranks", "4", "--", "--traffic-class", "999"], {},
     r"--traffic-class must be an integer 0\.\.255, got '999'"),
]


@pytest.mark.parametrize("args,extra,message", FIT_REFUSALS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_fit_refuses_bad_values_with_exit_2_naming_what_was_expected(host, args, extra, message):
    _clear_record(host)
    done = run([FIT, "--dir", os.path.join(host["root"], "fit-bad")] + args, {**fit_env(host), **extra})
    assert done.returncode == 2 and re.search(message, done.stderr), (done.returncode, done.stderr)
    assert _read_record(host) == (None, None)


# --- coverage: read from the presets, docs/launch.md, the scripts' help and sources --------

# What each read-back above exercises (an option, an environment variable), per launcher.
READ_BACK = {
    "fabscope-mpirun": {
        "--fabric", "--hosts", "--hostfile", "-N", "--ranks-per-node", "-np", "-n", "--np", "--bind",
        "--gpus-per-node", "--hca", "--gid-index", "--traffic-class", "--iface", "--env", "--mca",
        "--fault-tolerant", "--bin", "--mpirun", "--dry-run",
        "FABSCOPE_BIN", "FABSCOPE_SYSFS_ROOT", "FABSCOPE_CLUSTER_PREFIX", "FABSCOPE_CLUSTER_STATE_DIR",
        "FABSCOPE_FABRIC", "FABSCOPE_REPORT_EXIT", "FABSCOPE_RESULT_GRACE_S",
    },
    "fabscope.sbatch": {
        "FABSCOPE_FABRIC", "FABSCOPE_HCA", "FABSCOPE_GID_INDEX", "FABSCOPE_TRAFFIC_CLASS", "FABSCOPE_IFACE",
        "FABSCOPE_BIND", "FABSCOPE_FAULT_TOLERANT", "FABSCOPE_BIN", "FABSCOPE_SOURCE_DIR", "FABSCOPE_DRY_RUN",
        "FABSCOPE_SYSFS_ROOT", "FABSCOPE_REPORT_EXIT", "FABSCOPE_RESULT_GRACE_S",
    },
    "fabscope-fit": {
        "--dir", "--srun", "--dry-run", "--set", "--no-calibrate", "FABSCOPE_BIN", "FABSCOPE_PYTHON",
    },
}
# Read by a launcher but not a setting a dry run can show, and where each is checked instead.
NOT_READ_BACK = {
    "-h": "prints the usage", "--help": "prints the usage",
    "FABSCOPE_LAUNCH_DIR": "the scripts' own folder, not a setting",
    "FABSCOPE_DCB_TOOL": "where iproute2's dcb is; only warnings (tests/system/launch_presets.sh)",
}


def _read(path):
    with open(path) as f:
        return f.read()


def preset_variables(name):
    return set(re.findall(r"^\s*(?:if .*; then\s+)?fabric_set\s+([A-Za-z_][A-Za-z0-9_]*)\s",
                          _read(os.path.join(PRESET_DIR, name + ".env")), re.M))


def test_every_preset_file_and_variable_has_a_read_back():
    presets = sorted(f[:-4] for f in os.listdir(PRESET_DIR) if f.endswith(".env"))
    assert presets == sorted(PRESET_CASES), f"presets without read-back cases: {set(presets) - set(PRESET_CASES)}"
    for preset in presets:
        read_back = set().union(*(expected for _, _, expected in PRESET_CASES[preset]))
        in_file = preset_variables(preset)
        assert in_file and in_file <= read_back, \
            f"{preset}.env sets {sorted(in_file - read_back)} that no case reads back"
        assert read_back <= in_file, f"cases expect {sorted(read_back - in_file)} that {preset}.env does not set"


def _section(text, title):
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:end if end >= 0 else len(text)]


def _expand(name):
    """docs/launch.md's shorthand `OMPI_MCA_oob/btl_tcp_if_include` names two variables."""
    match = re.fullmatch(r"([A-Z]+_[A-Z]+_)([a-z]+)/([a-z]+)(_.*)", name)
    if not match:
        return [name]
    return [match[1] + match[2] + match[4], match[1] + match[3] + match[4]]


def test_docs_preset_table_names_what_the_presets_export():
    table = _section(_read(DOCS), "### Fabric presets")
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `([a-z]+)` \| (.*?) \|", table, re.M)}
    assert sorted(rows) == sorted(PRESET_CASES), f"docs/launch.md's preset rows: {sorted(rows)}"
    for preset, sets in rows.items():
        exported = PRESET_CASES[preset][0][2]
        every = set().union(*(expected for _, _, expected in PRESET_CASES[preset]))
        for span in re.findall(r"`([^`]+)`", sets):
            name, _, value = span.partition("=")
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*_[A-Za-z0-9_/]+", name):
                continue
            for variable in _expand(name):
                assert variable in every, f"docs/launch.md: the {preset} row names {variable}, not exported"
                if value:
                    assert exported[variable] in (value, os.path.join(REPO, value)), \
                        f"docs/launch.md: {preset} {variable}={value}, exported {exported[variable]}"


def _options(text):
    return set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)(?![\w-])", text))


def _help(script):
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout


def test_every_documented_option_and_variable_has_a_read_back():
    docs = _read(DOCS)
    mpirun_section = _section(docs, "## mpirun: ")
    table_options = set()
    for row in re.findall(r"^\| (.*?) \|", mpirun_section, re.M):
        for span in re.findall(r"`([^`]+)`", row):
            table_options |= _options(span)
    help_options = set()
    for line in _help(MPIRUN_WRAPPER).splitlines():
        if re.match(r"^  -", line):
            help_options |= _options(line.split("  ", 2)[1])
    documented = {
        "fabscope-mpirun": table_options | help_options
        | set(re.findall(r"\$(FABSCOPE_[A-Z_]+)", mpirun_section + _help(MPIRUN_WRAPPER))),
        "fabscope.sbatch": set(re.findall(r"\b(FABSCOPE_[A-Z_]+)", _section(docs, "## Slurm: ")))
        | set(re.findall(r"^#\s+(FABSCOPE_[A-Z_]+)", _read(SBATCH), re.M)),
        # fit's own options (its paragraph of "  --option" lines) and variables; the plan
        # options are read back as a whole (test_fit_hands_plan_run_and_fit_their_options)
        "fabscope-fit": {line.split()[0] for paragraph in _fit_usage_paragraphs()
                         if paragraph.startswith("  --") for line in paragraph.splitlines()
                         if line.startswith("  --")}
        | set(re.findall(r"\b(FABSCOPE_[A-Z_]+)", _help(FIT))),
    }
    assert len(documented["fabscope-mpirun"]) > 20 and len(documented["fabscope.sbatch"]) > 8, documented
    for launcher, names in documented.items():
        missing = names - READ_BACK[launcher] - set(NOT_READ_BACK)
        assert not missing, f"{launcher}: documented but never read back: {sorted(missing)}"


def test_every_variable_a_launcher_reads_has_a_read_back():
    scripts = {"fabscope-mpirun": [MPIRUN_WRAPPER], "fabscope.sbatch": [SBATCH], "fabscope-fit": [FIT]}
    shared = [os.path.join(LAUNCH, "lib", f) for f in os.listdir(os.path.join(LAUNCH, "lib"))]
    shared += [os.path.join(PRESET_DIR, f) for f in os.listdir(PRESET_DIR)]
    for launcher, files in scripts.items():
        own = set()
        for path in files + (shared if launcher != "fabscope-fit" else []):
            own |= set(re.findall(r"\$\{?(FABSCOPE_[A-Z_]+)", _read(path)))
        if launcher == "fabscope.sbatch":
            own -= {"FABSCOPE_CLUSTER_PREFIX", "FABSCOPE_CLUSTER_STATE_DIR"}   # emulated preset: refused there
        missing = own - READ_BACK[launcher] - set(NOT_READ_BACK)
        assert not missing, f"{launcher} reads {sorted(missing)} and no case reads it back"
