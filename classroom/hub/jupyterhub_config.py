"""JupyterHub for a cohort of the course, on one Linux server (run as root).

Installed with everything it needs by ``python classroom/room.py hub --prefix DIR``, which copies this
file to ``DIR/jupyterhub_config.py``; start it there: ``cd DIR && venv/bin/jupyterhub -f jupyterhub_config.py``.

- Log-in: the learners' unix accounts and passwords (PAM, JupyterHub's default), limited to the names in
  ``DIR/cohort.txt`` (one ``name lang`` a line; the trainer, as admin, via ``HUB_ADMINS=name,...``).
- One Jupyter server per learner, as that unix user (LocalProcessSpawner, JupyterHub's default), running
  this environment's Python: lib, torch (CPU), ipywidgets and the Japanese font are there.
- On each learner's first start, the learner notebooks of their language are copied into
  ``~/course`` (the directory made private to them); a learner's edits are never overwritten later.
  JupyterLab opens there.
- Idle kernels are shut down after 20 minutes, idle servers after an hour (jupyterhub-idle-culler).
- The proxy is configurable-http-proxy, from npm (``DIR/proxy``).
Environment: HUB_IP (default all interfaces), HUB_PORT (8000), HUB_ADMINS, HUB_CULL_SECONDS (3600),
HUB_API_PORT (8081) and HUB_PROXY_API_PORT (8001), both on 127.0.0.1 only.
Serve it behind HTTPS (a reverse proxy, or c.JupyterHub.ssl_cert/ssl_key) when learners log in over a
network: passwords travel in the log-in form.
"""
import os
import pwd
import shutil
import sys
from pathlib import Path

PREFIX = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
LANGS = ("en", "ja")

c = get_config()  # noqa: F821 - JupyterHub's config loader provides it


def read_cohort(path=PREFIX / "cohort.txt"):
    cohort = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if path.exists() else ():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or parts[1] not in LANGS:
            raise ValueError(f"{path}:{n}: expected 'name en' or 'name ja', got {line!r}")
        cohort[parts[0]] = parts[1]
    return cohort


COHORT = read_cohort()
ADMINS = {a for a in os.environ.get("HUB_ADMINS", "").split(",") if a}

c.JupyterHub.ip = os.environ.get("HUB_IP", "")
c.JupyterHub.port = int(os.environ.get("HUB_PORT", "8000"))
c.JupyterHub.hub_port = int(os.environ.get("HUB_API_PORT", "8081"))        # the hub's own API, on 127.0.0.1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('HUB_PROXY_API_PORT', '8001')}"
c.JupyterHub.db_url = f"sqlite:///{PREFIX / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(PREFIX / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(PREFIX / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [str(PREFIX / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(PREFIX / "jupyterhub-proxy.pid")

c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False          # no login sessions (utmp) for web log-ins
c.Authenticator.allowed_users = set(COHORT)
c.Authenticator.admin_users = ADMINS

c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~/course"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.args = [
    "--MappingKernelManager.cull_idle_timeout=1200",   # idle kernels: the memory a cohort holds
    "--MappingKernelManager.cull_interval=120",
    # Japanese without a system font: JupyterLab loads custom.css, which room.py hub put with its font into
    # the environment's jupyter_server/static/custom (a learner's own ~/.jupyter/custom/custom.css wins)
    "--LabApp.custom_css=True",
]
c.Spawner.environment = {
    # one thread per kernel: 30 learners share the cores (lib's training runs use one thread too)
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
}


def course_copy(spawner):
    """Copy the learner notebooks of the user's language into ~/course, once, owned by the user and
    readable by nobody else."""
    name = spawner.user.name
    lang = COHORT.get(name, "en")
    spawner.environment["BOOK_LANG"] = lang
    user = pwd.getpwnam(name)
    home = Path(user.pw_dir)
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, user.pw_uid, user.pw_gid)
    os.chmod(home, 0o700)                              # learners cannot read each other's work
    course = home / "course"
    if not course.exists():
        shutil.copytree(PREFIX / "notebooks" / lang, course)
        for p in [course, *course.rglob("*")]:
            os.chown(p, user.pw_uid, user.pw_gid)
            os.chmod(p, 0o700 if p.is_dir() else 0o600)
        spawner.log.info("course: copied the %s learner notebooks into %s", lang, course)


c.Spawner.pre_spawn_hook = course_copy

CULL = os.environ.get("HUB_CULL_SECONDS", "3600")
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL}"],
}]
