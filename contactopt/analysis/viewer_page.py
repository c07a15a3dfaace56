"""The page of the 3-D viewer (:mod:`contactopt.analysis.viewer`): one HTML file holding
meshcat's viewer script (``meshcat/viewer/dist/main.min.js``, inlined as meshcat's own static
export does), the scene as meshcat commands (msgpack, base64, replayed in order when the page
loads) and a panel with the runs, the time and the arrow scale; and a small local server.

The page publishes what it shows as ``window.contactopt``: the metadata given to
:func:`page_html` (runs, titles, colours, frame times, forces per frame, arrow scale) and
``viewer``, meshcat's :class:`Viewer` (``viewer.scene`` is the three.js scene and
``viewer.animator.seek(t)`` moves the time slider).
"""

from __future__ import annotations

import base64
import html
import http.server
import io
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contactopt.core.errors import ContactoptError
from contactopt.core.outputs import writable_file, write_text

__all__ = ["ViewPage", "label_png", "make_server", "page_html"]


def _viewer_script() -> str:
    from importlib.resources import files

    return (files("meshcat") / "viewer" / "dist" / "main.min.js").read_text(encoding="utf-8")


def label_png(text: str, colour: int) -> tuple[bytes, float]:
    """A PNG of ``text`` in ``colour`` on a transparent ground, and its width / height."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = 0.5
    width = max(2.0, 0.16 * len(text) + 0.4)
    fig = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(fig)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=15, color=f"#{colour:06x}", fontweight="bold")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", transparent=True)
    return buffer.getvalue(), width / height


_SCRIPT = """
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
(function () {
  const meta = JSON.parse(document.getElementById("contactopt-meta").textContent);
  for (const text of JSON.parse(document.getElementById("contactopt-scene").textContent)) {
    const raw = atob(text), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    viewer.handle_command_bytearray(bytes);
  }
  viewer.animator.mixer.timeScale = meta.speed;
  for (const folder of Object.values(viewer.animator.folder.__folders))  // show the new time scale
    folder.__controllers.forEach(c => c.updateDisplay());
  viewer.gui.open();  // the time slider is in the open controls' Animations folder
  viewer.gui.__folders["Scene"].close();
  const clock = document.getElementById("contactopt-time");
  const digits = Math.max(3, Math.ceil(-Math.log10(Math.max(meta.duration, 1e-9) / 1000)));
  function tick() {
    clock.textContent = "t = " + viewer.animator.time.toFixed(digits) + " s";
    requestAnimationFrame(tick);
  }
  tick();
  window.contactopt = Object.assign(meta, {viewer: viewer});
})();
"""


def page_html(commands: list[bytes], meta: dict[str, Any]) -> str:
    """The page: meshcat's script, the ``commands`` (packed meshcat commands) and the panel."""
    runs = "".join(
        f'<div><span class="swatch" style="background:{run["colour"]}"></span>{html.escape(run["title"])}'
        + ("" if run["completed"] else f' <em>(stopped: {html.escape(str(run["message"]))})</em>') + "</div>"
        for run in meta["runs"])
    scale = float(meta["arrow_scale"])
    arrows = ("force arrows: 1 N = {:.3g} mm (arrows longer than {:.3g} m are cut)".format(1e3 * scale, meta[
        "longest_arrow"]) if scale > 0 else "no contact forces")
    speed = "" if meta["speed"] >= 1.0 else f" · plays at {meta['speed']:.3g}× real time"
    scene = json.dumps([base64.b64encode(command).decode("ascii") for command in commands])
    title = html.escape(meta["title"] or "contactopt view")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ margin: 0; }}
#meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
#contactopt-panel {{ position: absolute; left: 8px; top: 8px; padding: 6px 9px; background: rgba(255,255,255,0.85);
  font: 13px sans-serif; border-radius: 4px; pointer-events: none; max-width: 55vw; }}
#contactopt-panel .swatch {{ display: inline-block; width: 11px; height: 11px; margin-right: 5px; }}
</style></head>
<body>
<div id="meshcat-pane"></div>
<div id="contactopt-panel"><b>{title}</b>{runs}
<div id="contactopt-time">t = 0 s</div><div>{arrows}{speed}</div>
<div>time slider: Animations (right)</div></div>
<script type="application/json" id="contactopt-meta">{_json_in_html(meta)}</script>
<script type="application/json" id="contactopt-scene">{scene}</script>
<script>{_viewer_script()}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _json_in_html(data: Any) -> str:
    """JSON that cannot close its ``<script>`` element."""
    return json.dumps(data).replace("<", "\\u003c")


@dataclass
class ViewPage:
    """A written or writable viewer page: ``html`` (self-contained), ``meta`` (what it shows,
    :func:`page_html`) and ``path`` once saved. In a notebook it shows inline (an iframe)."""

    html: str
    meta: dict[str, Any]
    path: Path | None = field(default=None)

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (an ``.html`` file) and return it."""
        target = writable_file(path, "viewer page")
        write_text(target, self.html, "viewer page")
        self.path = target
        return target

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width:100%;height:480px;border:0" '
                'sandbox="allow-scripts"></iframe>')

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> http.server.ThreadingHTTPServer:
        """Serve the page at ``http://host:port/`` from a background thread (port 0: a free
        one, ``server.server_address`` says which); ``server.shutdown()`` stops it."""
        server = make_server(self.html, host, port)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def make_server(page: str, host: str = "127.0.0.1", port: int = 0) -> http.server.ThreadingHTTPServer:
    """An HTTP server answering every GET with ``page`` (not started)."""
    body = page.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the CLI prints the address once
            return

    try:
        return http.server.ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise ContactoptError(f"cannot serve the viewer on {host}:{port}: {exc.strerror or exc}") from exc
