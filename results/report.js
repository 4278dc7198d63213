"use strict";
// Zoom and pan for the report's plots. Every plot is an SVG whose x axis is
// run time in ms, so showing [v0, v1] is one viewBox per plot; the overlay
// labels (data-t, data-t1 in ms) are moved in percent of that range.
(() => {
  const tl = document.getElementById("timeline");
  if (!tl || !document.querySelector("svg.zoom")) return;
  const end = Math.max(+tl.dataset.end, 1);
  const zooms = [...document.querySelectorAll("svg.zoom")];
  const labels = [...document.querySelectorAll("svg.overlay [data-t]")];
  const axes = [...document.querySelectorAll("svg.axis")];
  const plots = zooms.map((z) => z.parentElement);
  const range = document.getElementById("range");
  const readout = document.getElementById("readout");
  const NS = "http://www.w3.org/2000/svg";
  const tip = document.body.appendChild(document.createElement("div"));
  tip.id = "tip";
  tip.style.display = "none";
  let v0 = 0, v1 = end;

  const make = (overlay, tag, cls) => {
    const el = document.createElementNS(NS, tag);
    el.setAttribute("class", cls);
    el.style.display = "none";
    overlay.appendChild(el);
    return el;
  };
  const cursors = plots.map((p) => {
    const line = make(p.querySelector("svg.overlay"), "line", "cursor");
    line.setAttribute("y1", 0);
    line.setAttribute("y2", "100%");
    return line;
  });

  const digits = (w) => (w < 2000 ? 3 : w < 60000 ? 2 : 1);
  const fmt = (t) => (t / 1000).toFixed(digits(v1 - v0)) + " s";
  const pct = (t) => ((t - v0) / (v1 - v0)) * 100 + "%";
  const width = () => plots[0].clientWidth || 1000;
  const timeAt = (plot, clientX) => {
    const r = plot.getBoundingClientRect();
    return v0 + ((clientX - r.left) / r.width) * (v1 - v0);
  };

  function show(a, b) {
    const w = Math.min(Math.max(b - a, 1), end);
    v0 = Math.min(Math.max(a, 0), end - w);
    v1 = v0 + w;
    draw();
  }

  function draw() {
    const w = v1 - v0, px = width();
    for (const z of zooms) z.setAttribute("viewBox", `${v0} 0 ${w} ${z.getAttribute("height")}`);
    // Fault labels and violation numbers come in time order; one that would
    // cover the one before it is left out (every fault keeps its band, every
    // violation its line and marks, and zooming in brings the label back).
    const ends = { flabel: -Infinity, vnum: -Infinity };
    for (const l of labels) {
      const a = +l.dataset.t, b = l.dataset.t1 === undefined ? a : +l.dataset.t1;
      const x = ((Math.max(a, v0) - v0) / w) * px;
      const room = ((Math.min(b, v1) - Math.max(a, v0)) / w) * px;
      const crowd = l.classList.contains("vnum") ? "vnum" : l.classList.contains("flabel") ? "flabel" : "";
      let on = b >= v0 && a <= v1;
      // A token or a fault's name shows only where its bar or band has room.
      if (on && l.classList.contains("tok")) on = room > 30;
      if (on && crowd === "flabel") on = room > 24;
      if (on && crowd) on = x >= ends[crowd];
      l.style.display = on ? "" : "none";
      if (!on) continue;
      l.setAttribute("x", pct(Math.max(a, v0)));
      if (crowd === "flabel") fit(l, room - 4);
      if (crowd) ends[crowd] = x + l.getComputedTextLength() + 6;
    }
    drawAxes(w, px);
    range.textContent = `${fmt(v0)} – ${fmt(v1)}`;
  }

  // fit cuts a label's text to room px, with an ellipsis; its tooltip keeps
  // all of it.
  function fit(l, room) {
    const text = l.lastChild;
    const full = l.dataset.full ?? (l.dataset.full = text.textContent);
    text.textContent = full;
    for (let n = full.length; l.getComputedTextLength() > room && n > 1; ) {
      n = Math.min(n - 1, Math.floor((full.length * room) / l.getComputedTextLength()));
      text.textContent = full.slice(0, Math.max(n, 1)) + "…";
    }
  }

  // About one tick per 90 px, at 1, 2 or 5 times a power of ten.
  function drawAxes(w, px) {
    const target = w / Math.max(px / 90, 2);
    const p = Math.pow(10, Math.floor(Math.log10(target)));
    const s = [1, 2, 5, 10].map((m) => m * p).find((v) => v >= target);
    const d = Math.max(0, Math.min(3, 3 - Math.floor(Math.log10(s))));
    let svg = "";
    for (let t = Math.ceil(v0 / s) * s; t <= v1; t += s) {
      // The ends' labels lean inwards, so none is cut off.
      const f = (t - v0) / w, anchor = f < 0.02 ? "start" : f > 0.98 ? "end" : "middle";
      svg += `<line x1="${pct(t)}" x2="${pct(t)}" y1="0" y2="5"/><text x="${pct(t)}" y="16" text-anchor="${anchor}">${(t / 1000).toFixed(d)} s</text>`;
    }
    for (const a of axes) a.innerHTML = svg;
  }

  // Jump links frame a moment and light up its mark.
  let lit = null;
  function jump(a) {
    show(+a.dataset.t0, +a.dataset.t1);
    if (lit) lit.classList.remove("hl");
    lit = a.dataset.mark ? document.getElementById(a.dataset.mark) : null;
    if (lit) lit.classList.add("hl");
    tl.scrollIntoView({ block: "start" });
  }
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a.jump");
    if (!a) return;
    e.preventDefault();
    jump(a);
    history.replaceState(null, "", a.getAttribute("href"));
  });

  const buttons = {
    all: () => show(0, end),
    out: () => show(v0 - (v1 - v0) / 2, v1 + (v1 - v0) / 2),
    in: () => show(v0 + (v1 - v0) / 4, v1 - (v1 - v0) / 4),
    left: () => show(v0 - (v1 - v0) / 2, v1 - (v1 - v0) / 2),
    right: () => show(v0 + (v1 - v0) / 2, v1 + (v1 - v0) / 2),
  };
  for (const b of document.querySelectorAll("[data-zoom]")) b.addEventListener("click", () => buttons[b.dataset.zoom]());

  // Drag across a plot to zoom into that time; hover for the time.
  let drag = null;
  for (const p of plots) {
    const sel = make(p.querySelector("svg.overlay"), "rect", "sel");
    sel.setAttribute("y", 0);
    sel.setAttribute("height", "100%");
    p.addEventListener("mousedown", (e) => {
      if (e.button !== 0 || e.target.closest("a")) return;
      e.preventDefault();
      drag = { plot: p, sel, x: e.clientX, t: timeAt(p, e.clientX) };
    });
    p.addEventListener("mousemove", (e) => {
      const t = timeAt(p, e.clientX);
      readout.textContent = "at " + fmt(t);
      const tipped = drag ? null : e.target.closest("[data-tip]");
      tip.style.display = tipped ? "" : "none";
      if (tipped) {
        tip.textContent = tipped.dataset.tip;
        tip.style.left = Math.min(e.pageX + 12, document.documentElement.scrollWidth - tip.offsetWidth - 8) + "px";
        tip.style.top = e.pageY + 16 + "px";
      }
      for (const c of cursors) {
        c.style.display = "";
        c.setAttribute("x1", pct(t));
        c.setAttribute("x2", pct(t));
      }
    });
    p.addEventListener("mouseleave", () => {
      readout.textContent = "";
      tip.style.display = "none";
      for (const c of cursors) c.style.display = "none";
    });
    p.addEventListener("wheel", (e) => {
      e.preventDefault();
      const w = v1 - v0;
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const d = ((e.shiftKey ? e.deltaY : e.deltaX) / width()) * w;
        show(v0 + d, v1 + d);
        return;
      }
      const t = timeAt(p, e.clientX), f = Math.pow(1.002, e.deltaY);
      show(t - (t - v0) * f, t + (v1 - t) * f);
    }, { passive: false });
  }
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const t = timeAt(drag.plot, e.clientX);
    drag.sel.style.display = "";
    drag.sel.setAttribute("x", pct(Math.min(t, drag.t)));
    drag.sel.setAttribute("width", (Math.abs(t - drag.t) / (v1 - v0)) * 100 + "%");
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    d.sel.style.display = "none";
    if (Math.abs(e.clientX - d.x) > 4) {
      const t = timeAt(d.plot, e.clientX);
      show(Math.min(t, d.t), Math.max(t, d.t));
    }
  });
  window.addEventListener("resize", draw);

  draw();
  // A shared link to a violation opens on it.
  const target = [...document.querySelectorAll("a.jump")].find((a) => location.hash && a.getAttribute("href") === location.hash);
  if (target) jump(target);
})();
