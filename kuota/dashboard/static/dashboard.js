// kuota dashboard: live updates without reloading the page.
// The server sends the current version of its data over server-sent events (/events);
// when it differs from the one this page was rendered from, the page's <main> is fetched
// again (?fragment=1) and swapped in place. Without EventSource, or while it is down, the
// page polls /version every 2 s instead.
(function () {
  "use strict";
  var main = document.querySelector("main");
  var live = document.querySelector(".live");
  if (!main || !live) { return; }
  var busy = false, wanted = null;

  function stamp(text, down) {
    live.textContent = text;
    live.classList.toggle("down", !!down);
  }

  function refresh(version) {
    if (version === main.dataset.version) { return; }
    wanted = version;
    if (busy) { return; }
    busy = true;
    var url = location.pathname + location.search + (location.search ? "&" : "?") + "fragment=1";
    fetch(url, {headers: {"Accept": "text/html"}, cache: "no-store"}).then(function (r) {
      if (!r.ok) { throw new Error(r.status + " " + r.statusText); }
      var got = r.headers.get("X-Kuota-Version");
      return r.text().then(function (html) {
        main.innerHTML = html;
        main.dataset.version = got;
        stamp("live · updated " + new Date().toLocaleTimeString());
      });
    }).catch(function (err) {
      stamp("update failed: " + err.message, true);
    }).then(function () {
      busy = false;
      if (wanted !== null && wanted !== main.dataset.version) { refresh(wanted); }
    });
  }

  var timer = null;
  function poll() {
    if (timer !== null) { return; }
    timer = setInterval(function () {
      fetch("/version", {cache: "no-store"}).then(function (r) { return r.text(); })
        .then(function (v) { refresh(v.trim()); })
        .catch(function () { stamp("disconnected: retrying", true); });
    }, 2000);
  }

  if (!window.EventSource) { poll(); return; }
  var source = new EventSource("/events");
  source.onopen = function () {
    if (timer !== null) { clearInterval(timer); timer = null; }
    stamp("live");
  };
  source.onmessage = function (e) { refresh(e.data); };
  source.onerror = function () { stamp("disconnected: retrying", true); poll(); };
})();
