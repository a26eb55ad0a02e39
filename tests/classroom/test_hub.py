"""A real JupyterHub for a cohort (classroom/hub, installed by `room.py hub`), on 127.0.0.1, with two real
unix users created by the test (so it needs root; elsewhere it skips and says why): both log in with their
passwords, each gets their own copy of the learner notebooks in their language, a learner notebook runs
cell by cell through the user's own Jupyter server (REST and the kernel websocket), widgets and lib are
there, and neither user can read or change the other's files. It also measures the memory of one
learner's server while a chapter runs, and runs a load test: HUB_LOAD_LEARNERS more learners (6 by
default) log in, start their servers and run a chapter side by side, each timed cell by cell, with the
memory and CPU of each learner's processes (classroom/README.md sizes a hub from these figures)."""
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import NOTEBOOKS, ROOT, chapters, record, skip_or_fail

NB_CAVEATS = chapters.notebook_name("caveats")   # the learner notebook's file name
NB_FORMULA = chapters.notebook_name("formula")   # the learner notebook's file name

requests = pytest.importorskip("requests")

PREFIX = Path(os.environ.get("HUB_TEST_PREFIX", "/tmp/sdpa-course-hub-test"))
USERS = {"sdpacourse-a": "en", "sdpacourse-b": "ja"}
LOAD_LEARNERS = int(os.environ.get("HUB_LOAD_LEARNERS", "6"))
LOAD_USERS = {f"sdpacourse-l{i}": ("en", "ja")[i % 2] for i in range(LOAD_LEARNERS)}
ALL_USERS = {**USERS, **LOAD_USERS}
HUB_PYTHON = os.environ.get("HUB_PYTHON", "/usr/bin/python3")
CELL_SECONDS = 300                      # the longest a cell may take through a user's server


def kill_processes_of(name, wait=10.0):
    """SIGTERM, then SIGKILL, every process of the unix user ``name`` (none if there is no such user)."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return

    def pids():
        out = []
        for p in Path("/proc").glob("[0-9]*"):
            try:
                if p.stat().st_uid == uid:
                    out.append(int(p.name))
            except OSError:
                pass
        return out

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.monotonic() + wait
        while pids() and time.monotonic() < end:
            time.sleep(0.2)
        if not pids():
            return


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def hub(built):
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        skip_or_fail("the JupyterHub test creates two unix users and spawns their servers as them: run it as root")
    for tool in ("useradd", "userdel", "chpasswd", "npm"):
        if not shutil.which(tool):
            skip_or_fail(f"the JupyterHub test needs {tool}")
    if not Path(HUB_PYTHON).exists():
        skip_or_fail(f"no system-wide Python at {HUB_PYTHON} (HUB_PYTHON=...) for the hub's environment")
    t = time.perf_counter()
    subprocess.run([sys.executable, ROOT / "classroom" / "room.py", "hub", "--prefix", PREFIX,
                    "--python", HUB_PYTHON], check=True, cwd=ROOT)
    record("hub: install s (room.py hub; warm when the prefix is kept)", round(time.perf_counter() - t, 1))
    passwords = {}
    for name in ALL_USERS:
        # a user left by an earlier run that was killed: stop what it still runs, then remove it (userdel
        # refuses a user with live processes); if it cannot be removed, it is reused with a new password
        # and a fresh home
        kill_processes_of(name)
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True)
        made = subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], capture_output=True, text=True)
        if made.returncode == 9:                      # 9: the name is in use
            entry = pwd.getpwnam(name)
            home = Path(entry.pw_dir)
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            os.chown(home, entry.pw_uid, entry.pw_gid)
            home.chmod(0o700)
        elif made.returncode:
            raise AssertionError(f"useradd {name} failed ({made.returncode}): {made.stderr}")
        passwords[name] = secrets.token_urlsafe(12)
        subprocess.run(["chpasswd"], input=f"{name}:{passwords[name]}\n", text=True, check=True)
    (PREFIX / "cohort.txt").write_text("".join(f"{n} {lang}\n" for n, lang in ALL_USERS.items()))
    for f in ("jupyterhub.sqlite", "jupyterhub_cookie_secret"):
        (PREFIX / f).unlink(missing_ok=True)
    port = free_port()
    env = dict(os.environ, HUB_IP="127.0.0.1", HUB_PORT=str(port), HUB_API_PORT=str(free_port()),
               HUB_PROXY_API_PORT=str(free_port()), HUB_CULL_SECONDS="3600")
    env.pop("PYTHONPATH", None)
    log = open(PREFIX / "jupyterhub-test.log", "w")
    proc = subprocess.Popen([PREFIX / "venv" / "bin" / "jupyterhub", "-f", "jupyterhub_config.py"],
                            cwd=PREFIX, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                break
            try:
                if requests.get(f"{base}/hub/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        else:
            pass
        if proc.poll() is not None or requests.get(f"{base}/hub/health", timeout=5).status_code != 200:
            raise AssertionError("JupyterHub did not start:\n" + (PREFIX / "jupyterhub-test.log").read_text()[-5000:])
        yield {"base": base, "passwords": passwords, "proc": proc}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)           # the hub stops the users' servers and the proxy
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        proxy_pid = PREFIX / "jupyterhub-proxy.pid"
        if proxy_pid.is_file():
            try:
                os.kill(int(proxy_pid.read_text().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        for name in ALL_USERS:                        # anything of the users' that is left
            kill_processes_of(name)
        log.close()
        for name in ALL_USERS:
            subprocess.run(["userdel", "-r", "-f", name], capture_output=True)


def login(hub, name, password=None):
    """Log in through the hub's form (PAM: the unix password), then make an API token for the user."""
    s = requests.Session()
    base = hub["base"]
    s.get(f"{base}/hub/login", timeout=30)
    xsrf = [c.value for c in s.cookies if c.name == "_xsrf"][-1]
    r = s.post(f"{base}/hub/login", data={"username": name, "password": password or hub["passwords"][name],
                                          "_xsrf": xsrf}, allow_redirects=False, timeout=60)
    if r.status_code not in (302, 303):
        return None, None
    s.get(f"{base}/hub/token", timeout=30)             # the log-in set a new xsrf cookie
    xsrf = [c.value for c in s.cookies if c.name == "_xsrf"][-1]
    r = s.post(f"{base}/hub/api/users/{name}/tokens", json={"note": "test", "expires_in": 3600},
               headers={"X-XSRFToken": xsrf, "Referer": f"{base}/hub/token"}, timeout=30)
    r.raise_for_status()
    return s, r.json()["token"]


def start_server(hub, name):
    """Log ``name`` in, start their server and wait until it is ready: the server's handle."""
    base = hub["base"]
    s, token = login(hub, name)
    assert token, f"{name} could not log in"
    h = {"Authorization": f"token {token}"}
    r = requests.post(f"{base}/hub/api/users/{name}/server", headers=h, timeout=60)
    assert r.status_code in (201, 202), r.text
    for _ in range(480):
        u = requests.get(f"{base}/hub/api/users/{name}", headers=h, timeout=30).json()
        if u.get("servers", {}).get("", {}).get("ready"):
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"{name}'s server did not start:\n" +
                             (PREFIX / "jupyterhub-test.log").read_text()[-5000:])
    return {"headers": h, "url": f"{base}/user/{name}", "session": s}


@pytest.fixture(scope="module")
def servers(hub):
    return {name: start_server(hub, name) for name in USERS}


def test_a_wrong_password_or_a_user_outside_the_cohort_cannot_log_in(hub):
    assert login(hub, "sdpacourse-a", "not-the-password")[1] is None
    assert login(hub, "root", "x")[1] is None


def test_each_learner_has_their_own_notebooks_in_their_language(hub, servers):
    for name, lang in USERS.items():
        r = requests.get(f"{servers[name]['url']}/api/contents/", headers=servers[name]["headers"], timeout=30)
        r.raise_for_status()
        names = sorted(c["name"] for c in r.json()["content"] if c["type"] == "notebook")
        assert names == sorted(p.name for p in (NOTEBOOKS / lang / "learner").glob("*.ipynb")), (name, names)
        home = Path(pwd.getpwnam(name).pw_dir)
        first = home / "course" / NB_FORMULA
        assert first.stat().st_uid == pwd.getpwnam(name).pw_uid
        assert first.read_text(encoding="utf-8") == (NOTEBOOKS / lang / "learner" / NB_FORMULA).read_text(
            encoding="utf-8")
        assert ("set_language('ja')" in first.read_text(encoding="utf-8")) == (lang == "ja")


def test_widgets_are_installed_in_jupyterlab(servers):
    s = servers["sdpacourse-a"]
    r = requests.get(f"{s['url']}/lab", headers=s["headers"], timeout=30)      # the page JupyterLab loads
    r.raise_for_status()
    assert '"name": "@jupyter-widgets/jupyterlab-manager"' in r.text


def test_jupyterlab_serves_the_japanese_font(servers):
    """Each learner's JupyterLab loads the course's custom.css, which serves IPAexGothic: Japanese shows
    without a Japanese system font on the learner's machine."""
    s = servers["sdpacourse-b"]
    css = requests.get(f"{s['url']}/custom/custom.css", headers=s["headers"], timeout=30)
    css.raise_for_status()
    assert "@font-face" in css.text and "IPAexGothic" in css.text
    font = requests.get(f"{s['url']}/custom/ipaexg.ttf", headers=s["headers"], timeout=60)
    font.raise_for_status()
    assert len(font.content) > 1_000_000 and font.content[:4] == b"\x00\x01\x00\x00"
    page = requests.get(f"{s['url']}/lab", headers=s["headers"], timeout=30)
    page.raise_for_status()
    assert "custom/custom.css" in page.text


def _user_rss(uid):
    total = 0
    for p in Path("/proc").glob("[0-9]*"):
        try:
            if p.stat().st_uid != uid:
                continue
            for line in (p / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class Kernel:
    """A kernel of the user's server, driven over its websocket channel (Jupyter messaging protocol)."""

    def __init__(self, server, path):
        from websocket import create_connection  # websocket-client (JupyterLab's own dependency stack)

        r = requests.post(f"{server['url']}/api/sessions", headers=server["headers"], timeout=60,
                          json={"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}})
        r.raise_for_status()
        self.kernel_id = r.json()["kernel"]["id"]
        ws_url = server["url"].replace("http://", "ws://") + f"/api/kernels/{self.kernel_id}/channels"
        self.ws = create_connection(ws_url, header=[f"Authorization: {server['headers']['Authorization']}"],
                                    timeout=300)
        self.session = uuid.uuid4().hex
        self._wait_until_ready()

    def _send(self, msg_type, content):
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "username": "test",
                       "session": self.session, "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [], "content": content}))
        return msg_id

    def _wait_until_ready(self, within=120.0):
        """What Jupyter's own clients do on connecting: ask for kernel_info until the kernel answers. A
        request sent while a freshly started kernel is still connecting its channels can be lost (the
        hub test once waited on such a lost execute_request)."""
        from websocket import WebSocketTimeoutException

        end = time.monotonic() + within
        self.ws.settimeout(3)
        try:
            while time.monotonic() < end:
                msg_id = self._send("kernel_info_request", {})
                try:
                    while True:
                        m = json.loads(self.ws.recv())
                        if m.get("parent_header", {}).get("msg_id") == msg_id and \
                                m["msg_type"] == "kernel_info_reply":
                            return
                except WebSocketTimeoutException:
                    continue
            raise AssertionError(f"the kernel did not answer kernel_info within {within:.0f} s")
        finally:
            self.ws.settimeout(300)

    def execute(self, code):
        msg_id = self._send("execute_request", {"code": code, "silent": False, "store_history": True,
                                                "user_expressions": {}, "allow_stdin": False,
                                                "stop_on_error": True})
        from websocket import WebSocketTimeoutException

        outputs, reply, idle = [], None, False
        end = time.monotonic() + CELL_SECONDS    # websocket pings keep recv() from ever timing out alone
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no reply to a cell within {CELL_SECONDS} s:\n{code[:500]}")
            self.ws.settimeout(min(left, 10.0))
            try:
                m = json.loads(self.ws.recv())
            except WebSocketTimeoutException:
                continue
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["msg_type"] in ("stream", "execute_result", "display_data", "error"):
                outputs.append(m)
            if m["channel"] == "shell" and m["msg_type"] == "execute_reply":
                reply = m["content"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                idle = True                      # iopub's idle: every output of the cell has been sent
            # the shell reply and iopub's idle come on different channels, in either order
            if idle and reply is not None:
                return reply, outputs

    def close(self):
        self.ws.close()


def run_notebook(server, path, cell_seconds=None):
    """Run every code cell of ``path`` in a kernel of the user's server, as Run All does; the number of
    cells (and each cell's seconds appended to ``cell_seconds`` when given)."""
    r = requests.get(f"{server['url']}/api/contents/{path}", headers=server["headers"], timeout=30)
    r.raise_for_status()
    cells = [c for c in r.json()["content"]["cells"] if c["cell_type"] == "code"]
    k = Kernel(server, path)
    try:
        for i, c in enumerate(cells):
            t = time.perf_counter()
            reply, outputs = k.execute("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            if cell_seconds is not None:
                cell_seconds.append(time.perf_counter() - t)
            assert reply["status"] == "ok", (path, i, reply.get("ename"), reply.get("evalue"),
                                             "".join(reply.get("traceback", []))[-2000:])
    finally:
        k.close()
    return len(cells)


def test_a_learner_notebook_runs_through_each_users_server_and_memory_is_measured(servers):
    for name, nb in (("sdpacourse-a", NB_FORMULA), ("sdpacourse-b", NB_CAVEATS)):
        uid = pwd.getpwnam(name).pw_uid
        peak, stop = [_user_rss(uid)], threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], _user_rss(uid))
                time.sleep(0.2)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t = time.perf_counter()
        try:
            n = run_notebook(servers[name], nb)
        finally:
            stop.set()
            th.join()
        record(f"hub: {USERS[name]}/{nb}: {n} code cells s", round(time.perf_counter() - t, 1))
        record(f"hub: {USERS[name]}/{nb}: peak MiB of the user's processes (server + kernel)",
               round(peak[0] / 2**20))


def test_lib_and_ipywidgets_import_as_the_user(servers):
    k = Kernel(servers["sdpacourse-b"], NB_FORMULA)
    try:
        reply, out = k.execute("import os, lib, ipywidgets, torch; print(os.getuid(), torch.__version__, "
                               "os.environ.get('BOOK_LANG'))")
        assert reply["status"] == "ok", reply
        uid, version, lang = "".join(m["content"].get("text", "") for m in out).split()
        assert int(uid) == pwd.getpwnam("sdpacourse-b").pw_uid and version.startswith("2.13.0") and lang == "ja"
        # lib, installed from its wheel, finds the Japanese catalogs it carries
        reply, out = k.execute("print(lib.tr('attention weights'))")
        assert reply["status"] == "ok", reply
        said = "".join(m["content"].get("text", "") for m in out).strip()
        assert said and any("\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in said), said
        # a widget: the kernel opens a comm and sends its view to the front end
        reply, out = k.execute("display(ipywidgets.IntSlider(value=3))")
        assert reply["status"] == "ok", reply
        assert any("application/vnd.jupyter.widget-view+json" in m["content"].get("data", {}) for m in out), out
    finally:
        k.close()


def test_one_learner_cannot_read_or_change_the_others_files(servers):
    other = Path(pwd.getpwnam("sdpacourse-b").pw_dir) / "course"
    k = Kernel(servers["sdpacourse-a"], NB_FORMULA)
    try:
        code = ("import os\nres = []\n"
                f"for op in (lambda: os.listdir({str(other)!r}), lambda: open({str(other / NB_FORMULA)!r}).read(),\n"
                f"           lambda: open({str(other / 'mine.txt')!r}, 'w').write('x'),\n"
                f"           lambda: os.remove({str(other / NB_FORMULA)!r})):\n"
                "    try:\n        op(); res.append('allowed')\n"
                "    except PermissionError:\n        res.append('denied')\n"
                "print(res)")
        reply, out = k.execute(code)
        assert reply["status"] == "ok", reply
        assert "".join(m["content"].get("text", "") for m in out).strip() == str(["denied"] * 4)
    finally:
        k.close()
    # through the hub: a's token does not open b's server
    a = servers["sdpacourse-a"]
    r = requests.get(f"{servers['sdpacourse-b']['url']}/api/contents/", headers=a["headers"], timeout=30,
                     allow_redirects=False)
    assert r.status_code in (403, 404), r.status_code
    assert (other / NB_FORMULA).is_file() and not (other / "mine.txt").exists()


def test_the_idle_culler_runs_as_a_hub_service(hub):
    procs = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "jupyterhub_idle_culler" in cmd and "--timeout=3600" in cmd:
            procs.append(cmd)
    assert procs, "jupyterhub-idle-culler is not running"


def _user_cpu_seconds(uid):
    """User plus system CPU seconds of the live processes of ``uid`` (/proc/PID/stat, clock ticks)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for p in Path("/proc").glob("[0-9]*"):
        try:
            if p.stat().st_uid != uid:
                continue
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick      # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def test_load_learners_run_a_chapter_side_by_side(hub):
    """The load test: LOAD_LEARNERS learners start their servers at once and each runs the caveats chapter
    (the largest per-learner peak measured alone) in their language, side by side. Every learner must
    finish with no error; the times, memory and CPU go to _build/classroom/measured.json."""
    if not LOAD_USERS:
        pytest.skip("HUB_LOAD_LEARNERS=0")
    import statistics
    from concurrent.futures import ThreadPoolExecutor

    names = list(LOAD_USERS)
    uids = {n: pwd.getpwnam(n).pw_uid for n in names}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(names)) as pool:
        started = dict(zip(names, pool.map(lambda n: (start_server(hub, n), time.perf_counter() - t0), names)))
    spawn = sorted(dt for _, dt in started.values())
    peak = {n: 0 for n in names}
    together = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            rss = {n: _user_rss(uid) for n, uid in uids.items()}
            for n, v in rss.items():
                peak[n] = max(peak[n], v)
            together[0] = max(together[0], sum(rss.values()))
            time.sleep(0.3)

    cpu0 = {n: _user_cpu_seconds(uid) for n, uid in uids.items()}
    cells = {n: [] for n in names}
    errors = {}

    def learner(n):
        try:
            run_notebook(started[n][0], NB_CAVEATS, cells[n])
        except Exception as exc:  # noqa: BLE001 - every learner's failure is reported, not just the first
            errors[n] = f"{type(exc).__name__}: {str(exc)[:1500]}"
        return time.perf_counter()

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t1 = time.perf_counter()
    try:
        with ThreadPoolExecutor(len(names)) as pool:
            finished = dict(zip(names, pool.map(learner, names)))
    finally:
        stop.set()
        th.join()
    cpu = {n: _user_cpu_seconds(uids[n]) - cpu0[n] for n in names}
    walls = sorted(finished[n] - t1 for n in names)
    every_cell = sorted(x for n in names for x in cells[n])
    for n in names:                                   # free the machine for the tests that follow
        requests.delete(f"{hub['base']}/hub/api/users/{n}/server", headers=started[n][0]["headers"], timeout=120)
    key = f"hub load: {len(names)} learners, {NB_CAVEATS} side by side on {os.cpu_count()} cores"
    record(f"{key}: servers ready after s (median, slowest)", [round(statistics.median(spawn), 1), round(spawn[-1], 1)])
    record(f"{key}: chapter s per learner (median, slowest)", [round(statistics.median(walls), 1), round(walls[-1], 1)])
    record(f"{key}: cell s (median, 95th percentile, slowest)",
           [round(statistics.median(every_cell), 2), round(every_cell[int(0.95 * (len(every_cell) - 1))], 2),
            round(every_cell[-1], 2)])
    record(f"{key}: peak MiB per learner (median, largest)",
           [round(statistics.median(peak.values()) / 2**20), round(max(peak.values()) / 2**20)])
    record(f"{key}: peak MiB of all learners together", round(together[0] / 2**20))
    record(f"{key}: CPU s per learner (median, largest)", [round(statistics.median(cpu.values()), 1),
                                                          round(max(cpu.values()), 1)])
    record(f"{key}: learners that failed", len(errors))
    assert not errors, errors
    assert all(len(cells[n]) == len(cells[names[0]]) > 10 for n in names), {n: len(c) for n, c in cells.items()}
