"""`cugrade grade --slurm` on a real Slurm: a one-node cluster on localhost (munged, slurmctld and slurmd from the
distribution's packages, a generated slurm.conf, loopback only), a small class submitted as a job array and a merge
job, one task cancelled with scancel while it runs; the merged gradebook must equal a local `cugrade grade` of the
same class, with no student graded twice. Needs root (the daemons) and slurm-wlm and munge; skipped (77) otherwise.
Prints the job array's overhead over the local batch. Cleans up its daemons whatever happens.

usage: test_slurm.py CUGRADE SOURCE_DIR WORK_DIR"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

SKIP = 77
cugrade, source, work = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graded_ids(text):
    """Students a log says were graded (written): lines 'cugrade: [k/n] ID: ...', not 'graded by another batch'."""
    ids = []
    for line in text.splitlines():
        if line.startswith("cugrade: [") and "] " in line and "by another batch" not in line:
            ids.append(line.split("] ", 1)[1].split(":", 1)[0])
    return ids


def jobs_left(env, jobs):
    """What squeue still lists of the jobs: "" once they have all ended. A failed squeue (a controller busy or
    restarting) is not an empty queue: it says so, and the caller asks again. A job the controller has already
    forgotten has ended."""
    answer = subprocess.run(["squeue", "-h", "-j", ",".join(jobs)], env=env, capture_output=True, text=True)
    if answer.returncode != 0 and "Invalid job id" in answer.stderr:
        return ""
    if answer.returncode != 0:
        return f"(squeue failed: {answer.stderr.strip()})"
    return answer.stdout.strip()


def print_logs(*folders):
    """Every log the cluster and its jobs wrote, for a failure that CI alone shows."""
    for folder in folders:
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), errors="replace") as f:
                lines = f.read().splitlines()
            print(f"--- {name} (last {min(len(lines), 40)} of {len(lines)} lines)", file=sys.stderr)
            print("\n".join(lines[-40:]), file=sys.stderr)


def main():
    needed = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing or os.geteuid() != 0:
        print(f"skipped: needs root and {', '.join(missing) or 'nothing more'} (apt-get install slurm-wlm munge)")
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    for folder in ["state", "spool", "log"]:
        os.makedirs(os.path.join(work, folder))
    key = os.path.join(work, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o600)
    host = socket.gethostname().split(".")[0]
    conf = os.path.join(work, "slurm.conf")
    with open(conf, "w") as f:
        f.write(f"""ClusterName=cugradetest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={work}/munge.sock
CredType=cred/munge
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/log/slurmctld.log
SlurmdLogFile={work}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=conf)
    daemons = []
    try:
        subprocess.run(["munged", "--force", f"--socket={work}/munge.sock", f"--key-file={key}",
                        f"--pid-file={work}/munged.pid", f"--log-file={work}/log/munged.log",
                        f"--seed-file={work}/munge.seed"], check=True)
        daemons.append(("pidfile", f"{work}/munged.pid"))
        for command in (["slurmctld", "-D", "-i", "-f", conf], ["slurmd", "-D", "-f", conf]):
            daemons.append(("process", subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                                        stderr=open(f"{work}/log/{command[0]}.err", "w"))))
        deadline = time.time() + 60
        while time.time() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout
            if state.strip() == "idle":
                break
            time.sleep(1)
        else:
            check(False, f"the one-node cluster did not come up: sinfo says {state!r}")
            return 1

        # A class of six from the fixture corpus, graded by the cluster (from a cold cache, so that tasks run long
        # enough to be cancelled part-way), then locally.
        cls = os.path.join(work, "class")
        fixtures = ["seed_tree", "off_by_one", "compile_error", "warp_shuffle", "one_block", "atomics"]
        for i, fixture in enumerate(fixtures):
            os.makedirs(os.path.join(cls, f"s{i}"))
            shutil.copy(os.path.join(source, "tests/fixtures/sum", fixture, "sum.cu"), os.path.join(cls, f"s{i}"))
        common = ["-e", "sum", "--require-sandbox", "none", "--cache-dir", os.path.join(work, "cache"),
                  "--course", source, "--jobs", "1"]
        started = time.time()
        submitted = subprocess.run([cugrade, "grade", cls, "-o", os.path.join(work, "cluster"), "--slurm",
                                    "--tasks", "3", "--gres", "", "--sbatch-arg=--cpus-per-task=1"] + common,
                                   env=env, capture_output=True, text=True)
        check(submitted.returncode == 0, f"--slurm submits: {submitted.stdout} {submitted.stderr}")
        if submitted.returncode != 0:
            return 1
        words = submitted.stdout.split()
        array_job = words[words.index("array") + 1].rstrip(",")
        merge_job = words[words.index("job", words.index("merge")) + 1]
        print(submitted.stdout, end="")

        # Task 1 cancelled once it runs.
        cancelled = False
        deadline = time.time() + 300
        while time.time() < deadline and not cancelled:
            answer = subprocess.run(["squeue", "-h", "-j", f"{array_job}_1", "-o", "%T"], env=env,
                                    capture_output=True, text=True)
            state = answer.stdout.strip() if answer.returncode == 0 else "(squeue failed)"
            if state == "RUNNING":
                time.sleep(3)
                subprocess.run(["scancel", f"{array_job}_1"], env=env, check=True)
                cancelled = True
            elif state in ("", "COMPLETED", "FAILED"):
                break
            time.sleep(0.5)
        check(cancelled, "task 1 of the array was cancelled while it ran")
        status = subprocess.run([cugrade, "grade", "--status", os.path.join(work, "cluster")], capture_output=True,
                                text=True)
        print("while running:", status.stdout, end="")
        deadline = time.time() + 900
        while time.time() < deadline:
            queue = jobs_left(env, [array_job, merge_job])
            if queue == "":
                break
            time.sleep(1)
        check(queue == "", f"the jobs ended within 15 minutes: {queue}")
        cluster_seconds = time.time() - started

        # The local batch with a cache of its own, cold as the cluster's was: the two times compare.
        local_options = [o if o != os.path.join(work, "cache") else os.path.join(work, "local-cache") for o in common]
        started = time.time()
        local = subprocess.run([cugrade, "grade", cls, "-o", os.path.join(work, "local")] + local_options,
                               capture_output=True, text=True)
        local_seconds = time.time() - started
        check(local.returncode in (0, 77), f"the local batch ran: {local.stderr}")

        logs = os.path.join(work, "cluster", "slurm", "logs")
        merged = os.path.join(work, "cluster", "gradebook.csv")
        if not os.path.exists(merged):
            check(False, "the merge job wrote the gradebook")
            print_logs(logs, os.path.join(work, "log"))
            return 1
        with open(merged) as a, open(os.path.join(work, "local", "gradebook.csv")) as b:
            check(a.read() == b.read(), "the merged gradebook equals the local batch's")
        graded = []
        for name in sorted(os.listdir(logs)):
            with open(os.path.join(logs, name)) as f:
                ids = graded_ids(f.read())
            print(f"{name}: graded {ids}")
            graded += ids
        check(sorted(graded) == sorted(set(graded)), f"no student graded twice: {graded}")
        check(sorted(set(graded)) == [f"s{i}" for i in range(len(fixtures))], f"every student graded: {graded}")
        status = subprocess.run([cugrade, "grade", "--status", os.path.join(work, "cluster")], capture_output=True,
                                text=True)
        check(status.returncode == 0 and "0 missing" in status.stdout, f"--status says all done: {status.stdout}")
        print(f"job array (3 tasks of 1 core, one cancelled) and merge: {cluster_seconds:.1f} s from submission to "
              f"the gradebook; the same class in one local batch on 1 core: {local_seconds:.1f} s (both from a cold "
              f"build cache)")
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True)
        for kind, daemon in reversed(daemons):
            if kind == "process":
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    daemon.kill()
            else:
                try:
                    os.kill(int(open(daemon).read().strip()), signal.SIGTERM)
                except (OSError, ValueError):
                    pass
    return 1 if failures else 0


sys.exit(main())
