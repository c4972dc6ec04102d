/// The daemon's own page, served at `/`: the list, each row with its progress bar, speed, time left
/// and state, its pause, resume, remove and move buttons, and a field to add a URL. It speaks the same
/// JSON-RPC as every other front-end, over a WebSocket on `/jsonrpc` (plain `POST` while the socket is
/// down): the list is drawn again at each of aria2's notifications, and once a second for the bars.
/// The secret, when one is set, is typed once (or given in the link, `/#token=SECRET`) and kept in
/// the tab's session storage.
enum WebPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>fastpull</title>
        <style>
          body { font: 14px system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
          h1 { font-size: 1.3em; }
          form { display: flex; gap: .5em; margin-bottom: 1em; }
          input[type=url] { flex: 1; padding: .4em; }
          table { width: 100%; border-collapse: collapse; }
          td, th { padding: .4em; border-bottom: 1px solid #ddd; text-align: left; }
          progress { width: 12em; }
          .error { color: #b00; }
          #secret-row { display: none; margin-bottom: 1em; }
        </style>
        </head>
        <body>
        <h1>fastpull downloads</h1>
        <div id="secret-row"><label>Secret <input id="secret" type="password"></label>
          <button id="secret-save">Use</button></div>
        <form id="add"><input id="url" type="url" placeholder="https://…" required>
          <button type="submit">Add</button></form>
        <table>
          <thead><tr><th>File</th><th>Status</th><th>Progress</th><th>Speed, time left</th><th></th></tr></thead>
          <tbody id="rows"></tbody>
        </table>
        <p id="message" class="error"></p>
        <script>
        const keys = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "files", "errorMessage"];
        function token() { const s = sessionStorage.getItem("fastpull-secret"); return s ? ["token:" + s] : []; }
        let socket = null, calls = 0, notified = 0;
        const pending = new Map();
        function connect() {
          const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/jsonrpc");
          ws.onopen = () => { socket = ws; refresh(); };
          ws.onmessage = (event) => {
            const message = JSON.parse(event.data);
            if (message.method) { notified++; refresh(); return; }
            const resolve = pending.get(message.id);
            if (resolve) { pending.delete(message.id); resolve(message); }
          };
          ws.onclose = () => {
            socket = null;
            for (const resolve of pending.values()) resolve({ error: { message: "the connection to fastpull closed" } });
            pending.clear(); setTimeout(connect, 1000);
          };
        }
        async function rpc(method, params = []) {
          const call = { jsonrpc: "2.0", id: "page-" + (++calls), method, params: token().concat(params) };
          const answer = socket
            ? await new Promise((resolve) => { pending.set(call.id, resolve); socket.send(JSON.stringify(call)); })
            : await (await fetch("/jsonrpc", { method: "POST", headers: { "Content-Type": "application/json" },
                body: JSON.stringify(call) })).json();
          if (answer.error) {
            if (answer.error.message === "Unauthorized") document.getElementById("secret-row").style.display = "block";
            throw new Error(answer.error.message);
          }
          return answer.result;
        }
        function size(bytes) {
          const units = ["B", "KiB", "MiB", "GiB", "TiB"]; let value = Number(bytes), unit = 0;
          while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
          return value.toFixed(unit ? 1 : 0) + " " + units[unit];
        }
        function duration(seconds) {
          if (!isFinite(seconds)) return "";
          const h = Math.floor(seconds / 3600), m = Math.floor(seconds / 60) % 60, s = Math.floor(seconds) % 60;
          return h ? h + " h " + m + " min" : m ? m + " min " + s + " s" : s + " s";
        }
        function row(item) {
          const tr = document.createElement("tr"); tr.dataset.gid = item.gid;
          const path = (item.files && item.files[0] && item.files[0].path) || "(named by the server)";
          const name = document.createElement("td"); name.textContent = path.split("/").pop(); name.title = path;
          const status = document.createElement("td"); status.className = "status"; status.textContent = item.status;
          if (item.errorMessage) { status.classList.add("error"); status.title = item.errorMessage; }
          const progress = document.createElement("td"); const bar = document.createElement("progress");
          bar.max = Number(item.totalLength) || 1; bar.value = Number(item.completedLength);
          progress.append(bar, " " + size(item.completedLength) + (Number(item.totalLength) ? " of " + size(item.totalLength) : ""));
          const speed = document.createElement("td"); speed.className = "speed";
          const left = Number(item.totalLength) - Number(item.completedLength), rate = Number(item.downloadSpeed);
          if (item.status === "active") speed.textContent = size(rate) + "/s" + (rate > 0 && left > 0 ? ", " + duration(left / rate) + " left" : "");
          const actions = document.createElement("td");
          const button = (label, method) => { const b = document.createElement("button"); b.textContent = label; b.className = method;
            b.onclick = () => rpc(method, [item.gid]).then(refresh).catch(show); actions.append(b); };
          if (item.status === "active" || item.status === "waiting") button("Pause", "aria2.pause");
          if (item.status === "paused") button("Resume", "aria2.unpause");
          if (["active", "waiting", "paused"].includes(item.status)) button("Remove", "aria2.remove");
          else button("Forget", "aria2.removeDownloadResult");
          if (item.status === "waiting" || item.status === "paused") {
            const move = (label, offset) => { const b = document.createElement("button"); b.textContent = label; b.className = "move";
              b.onclick = () => rpc("aria2.changePosition", [item.gid, offset, "POS_CUR"]).then(refresh).catch(show); actions.append(b); };
            move("↑", -1); move("↓", 1);
          }
          tr.append(name, status, progress, speed, actions);
          return tr;
        }
        function show(error) { document.getElementById("message").textContent = error.message; }
        async function refresh() {
          try {
            const lists = await Promise.all([rpc("aria2.tellActive", [keys]), rpc("aria2.tellWaiting", [0, 1000, keys]),
              rpc("aria2.tellStopped", [0, 1000, keys])]);
            document.getElementById("rows").replaceChildren(...lists.flat().map(row));
            document.getElementById("message").textContent = "";
          } catch (error) { show(error); }
        }
        document.getElementById("add").onsubmit = (event) => { event.preventDefault();
          const url = document.getElementById("url"); rpc("aria2.addUri", [[url.value]]).then(() => { url.value = ""; refresh(); }).catch(show); };
        document.getElementById("secret-save").onclick = () => {
          sessionStorage.setItem("fastpull-secret", document.getElementById("secret").value); refresh(); };
        // A link with the secret (`/#token=SECRET`) keeps it in this tab and leaves no trace of it in the address.
        if (location.hash.startsWith("#token=")) {
          sessionStorage.setItem("fastpull-secret", decodeURIComponent(location.hash.slice(7)));
          history.replaceState(null, "", location.pathname);
        }
        connect(); refresh(); setInterval(refresh, 1000);
        </script>
        </body>
        </html>
        """#
}
