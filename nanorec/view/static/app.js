// nanorec view: the page. It asks the server (nanorec/view/api.py) for one message and one
// scene at a time, so scrubbing costs what one screen shows whatever the recording's length.
// Test hooks: #inspector[data-message] is the message shown; #scene[data-frame] the scene
// drawn and data-boxes/-points/-lines/-markers/-images what it drew of that scene,
// data-center the world point at the canvas's centre;
// window.nanorecView.seek(n) resolves once message n is painted.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const timeline = $("timeline");
  const canvas = $("scene");
  const state = {
    summary: null, number: -1, want: 0, busy: false, waiters: [],
    playing: false, overview: null, scene: null, images: new Map(),
    view: null, drag: null, plots: [], early: null,
  };

  // -- the server -------------------------------------------------------------------------

  async function api(path) {
    const response = await fetch(path);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `${path}: HTTP ${response.status}`);
    return body;
  }

  function say(error) {
    $("error").textContent = error ? String(error.message || error) : "";
  }

  const TYPED = {
    "|i1": Int8Array, "|u1": Uint8Array, "<i2": Int16Array, "<u2": Uint16Array,
    "<i4": Int32Array, "<u4": Uint32Array, "<f4": Float32Array, "<f8": Float64Array,
  };

  // A column as the server sends it: a typed block {dtype, shape, b64}, {list}, or a list.
  function column(value) {
    if (value == null) return [];
    if (Array.isArray(value)) return value;
    if (value.list) return value.list;
    if (value.b64 === undefined || !TYPED[value.dtype]) return [];
    const text = atob(value.b64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return new TYPED[value.dtype](bytes.buffer);
  }

  // A scene or overview with its columns as arrays; `bounds`, `follow` and an image's
  // `extent` may come as numpy arrays (typed blocks) or lists alike.
  function decodeLayers(answer) {
    for (const key of ["bounds", "follow"]) if (answer[key]) answer[key] = column(answer[key]);
    for (const layer of answer.layers || []) {
      if (layer.extent) layer.extent = column(layer.extent);
      for (const key of ["x", "y", "yaw", "length", "width", "class", "starts"]) {
        if (key in layer) layer[key] = column(layer[key]);
      }
      for (const key of ["label", "classes"]) if (key in layer) layer[key] = column(layer[key]);
    }
    return answer;
  }

  // -- seeking ----------------------------------------------------------------------------

  // Seek to message n; resolves when it is painted. Seeks while one is in flight collapse
  // into the last (a drag asks for every value it crosses).
  function seek(n) {
    const count = state.summary ? state.summary.messages : 0;
    n = Math.max(0, Math.min(count - 1, Math.round(n)));
    state.want = n;
    const painted = new Promise((resolve) => state.waiters.push({ n, resolve }));
    if (!state.busy) pump();
    return painted;
  }

  async function pump() {
    state.busy = true;
    while (state.want !== state.number) {
      const n = state.want;
      try {
        const early = state.early && state.early.n === n ? state.early : null;
        state.early = null;
        const [message, scene] = await Promise.all([
          early ? early.message : api(`/api/message/${n}`),
          state.summary.viewable
            ? (early ? early.scene : api(`/api/scene/${n}`)).then(decodeLayers) : null,
        ]);
        show(n, message, scene);
        say("");
      } catch (error) {
        say(error);
        state.number = n;
      }
    }
    state.busy = false;
    const waiting = state.waiters;
    state.waiters = [];
    for (const waiter of waiting) waiter.resolve(state.number);
  }

  function show(n, message, scene) {
    state.number = n;
    state.time = message.time;
    // not under a drag: the slider already says where the user is going
    if (n === state.want) timeline.value = String(n);
    const s = state.summary;
    $("time").value = `${fmt(message.time)} s / ${fmt(s.duration)} s · message ${n} / ` +
      `${s.messages - 1} · ${message.kind}`;
    inspect(message);
    state.scene = scene;
    drawScene();
    for (const plot of state.plots) drawPlot(plot);
  }

  function fmt(seconds) {
    return seconds == null ? "–" : Number(seconds).toFixed(3);
  }

  // -- the inspector ----------------------------------------------------------------------

  const MAX_ITEMS = 100;

  function inspect(message) {
    const box = $("inspector");
    box.replaceChildren(tree(message.kind || "value", message.value, 0));
    $("inspector-title").textContent = `${message.number} (${message.kind})`;
    box.dataset.message = String(message.number);
  }

  function tree(key, value, depth) {
    const big = value !== null && typeof value === "object" && !Array.isArray(value) &&
      Object.keys(value).length === 1 && typeof value.int === "string";
    if (big) value = value.int;  // an integer past 2**53, as its digits
    if (value === null || typeof value !== "object") {
      const leaf = document.createElement("div");
      leaf.className = "leaf";
      leaf.dataset.key = key;
      const name = document.createElement("span");
      name.className = "key";
      name.textContent = `${key}: `;
      const text = document.createElement("span");
      text.className = value === null ? "nul" : big || typeof value === "number" ? "num" : "str";
      text.textContent = value === null ? "null" : typeof value === "string" && !big
        ? JSON.stringify(value) : String(value);
      leaf.append(name, text);
      return leaf;
    }
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const details = document.createElement("details");
    details.dataset.key = key;
    details.open = depth < 2;
    const summary = document.createElement("summary");
    const label = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    summary.innerHTML = `<span class="key"></span> ${label}`;
    summary.firstChild.textContent = String(key);
    details.append(summary);
    const fill = () => {
      for (const [k, v] of entries.slice(0, MAX_ITEMS)) details.append(tree(k, v, depth + 1));
      if (entries.length > MAX_ITEMS) {
        const more = document.createElement("div");
        more.className = "leaf nul";
        more.textContent = `… ${entries.length - MAX_ITEMS} more`;
        details.append(more);
      }
    };
    if (details.open) fill();
    else details.addEventListener("toggle", fill, { once: true });
    return details;
  }

  // -- the scene --------------------------------------------------------------------------

  const NAMED = {
    red: "#e53935", green: "#43a047", yellow: "#fdd835", orange: "#fb8c00", blue: "#1e88e5",
    off: "#9e9e9e", unknown: "#9e9e9e", hero: "#d81b60", vehicle: "#1e88e5",
    walker: "#8e24aa", pedestrian: "#8e24aa", collision: "#d50000",
  };

  function colour(name) {
    const key = String(name || "").toLowerCase();
    for (const word of Object.keys(NAMED)) if (key.includes(word)) return NAMED[word];
    let hash = 0;
    for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0;
    return `hsl(${((hash % 360) + 360) % 360}, 60%, 45%)`;
  }

  // item i's colour: its class's (worked out once a layer: a map may have 100k points)
  function classColour(layer, i) {
    if (!layer.palette) {
      layer.palette = (layer.classes || []).map(colour);
      layer.fallback = colour(layer.name);
    }
    const index = layer.class && layer.class.length ? layer.class[i] : 0;
    return layer.palette[index] || layer.fallback;
  }

  function fit(bounds) {
    const [x0, y0, x1, y1] = bounds;
    const w = canvas.clientWidth || 600;
    const h = canvas.clientHeight || 400;
    const scale = Math.min(w / Math.max(x1 - x0, 1e-6), h / Math.max(y1 - y0, 1e-6)) * 0.9;
    state.view = { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, scale: isFinite(scale) ? scale : 1 };
  }

  function layerBounds(layers) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const layer of layers) {
      if (layer.extent) {
        x0 = Math.min(x0, layer.extent[0]); y0 = Math.min(y0, layer.extent[1]);
        x1 = Math.max(x1, layer.extent[2]); y1 = Math.max(y1, layer.extent[3]);
      }
      const xs = layer.x || [], ys = layer.y || [];
      for (let i = 0; i < xs.length; i++) {
        if (xs[i] < x0) x0 = xs[i]; if (xs[i] > x1) x1 = xs[i];
        if (ys[i] < y0) y0 = ys[i]; if (ys[i] > y1) y1 = ys[i];
      }
    }
    return isFinite(x0) ? [x0 - 5, y0 - 5, x1 + 5, y1 + 5] : null;
  }

  function drawScene() {
    const counts = { boxes: 0, points: 0, lines: 0, markers: 0, images: 0 };
    const scene = state.scene;
    if (state.summary.viewable) {
      const dpr = window.devicePixelRatio || 1;
      const w = canvas.clientWidth, h = canvas.clientHeight;
      if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
      if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
      const ctx = canvas.getContext("2d");
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      if (!state.view) {
        const bounds = (state.overview && state.overview.bounds) ||
          layerBounds((state.overview || {}).layers || []) ||
          layerBounds((scene || {}).layers || []) || [-50, -50, 50, 50];
        fit(bounds);
      }
      if (scene && scene.follow && $("follow").checked) {
        state.view.cx = scene.follow[0];
        state.view.cy = scene.follow[1];
      }
      const v = state.view;
      canvas.dataset.center = `${v.cx.toFixed(3)},${v.cy.toFixed(3)}`;
      const toScreen = (x, y) => [(x - v.cx) * v.scale + w / 2, h / 2 - (y - v.cy) * v.scale];
      const paint = { ctx, dpr, v, w, h, toScreen };
      const seen = new Set();
      drawOverview(paint, seen);  // under the scene
      for (const layer of under((scene || {}).layers || [])) drawLayer(paint, layer, counts, seen);
      legend(seen);
    }
    sideImages(scene, counts);
    for (const [key, value] of Object.entries(counts)) canvas.dataset[key] = String(value);
    canvas.dataset.frame = String(scene ? scene.number : state.number);
  }

  // Images in the world (a map) under everything else.
  function under(layers) {
    return [...layers].sort((a, b) => (b.kind === "image") - (a.kind === "image"));
  }

  // The overview (what does not change with time) drawn once per scale into a canvas of its
  // own, then copied at an offset on every frame: following an actor only moves it (a long
  // recording's whole path, stroked on every frame, took ~55 ms of a software-drawn page).
  function drawOverview(paint, seen) {
    const o = state.overview;
    const layers = under((o || {}).layers || []);
    if (!layers.length) return;
    const { v, dpr } = paint;
    const b = o.bounds || layerBounds(layers);
    const margin = 16;  // CSS px around the bounds: line widths, markers
    const w = b ? (b[2] - b[0]) * v.scale + 2 * margin : Infinity;
    const h = b ? (b[3] - b[1]) * v.scale + 2 * margin : Infinity;
    const loaded = layers.every((l) => l.kind !== "image" || !l.extent || picture(l).complete);
    if (!(w * dpr <= 8192 && h * dpr <= 8192) || !loaded) {  // zoomed far in; a map loading
      for (const layer of layers) drawLayer(paint, layer, {}, seen);
      return;
    }
    let cache = state.overviewCache;
    if (!cache || cache.overview !== o || cache.scale !== v.scale || cache.dpr !== dpr) {
      const copy = document.createElement("canvas");
      copy.width = Math.ceil(w * dpr);
      copy.height = Math.ceil(h * dpr);
      const cx = (b[0] + b[2]) / 2, cy = (b[1] + b[3]) / 2;
      const toScreen = (x, y) => [(x - cx) * v.scale + w / 2, h / 2 - (y - cy) * v.scale];
      const own = { ctx: copy.getContext("2d"), dpr, v: { cx, cy, scale: v.scale }, w, h, toScreen };
      const names = new Set();
      for (const layer of layers) drawLayer(own, layer, {}, names);
      cache = state.overviewCache = { overview: o, scale: v.scale, dpr, copy, cx, cy, w, h, names };
    }
    for (const name of cache.names) seen.add(name);
    const [sx, sy] = paint.toScreen(cache.cx, cache.cy);
    paint.ctx.setTransform(1, 0, 0, 1, 0, 0);
    paint.ctx.drawImage(cache.copy, Math.round((sx - cache.w / 2) * dpr),
      Math.round((sy - cache.h / 2) * dpr));
  }

  function legend(seen) {
    const box = $("legend");
    box.replaceChildren();
    for (const name of [...seen].slice(0, 24)) {
      const item = document.createElement("span");
      item.innerHTML = "<i></i>";
      item.firstChild.style.background = colour(name);
      item.append(name);
      box.append(item);
    }
  }

  function drawLayer(paint, layer, counts, seen) {
    const { ctx, dpr, v, toScreen } = paint;
    const world = () => ctx.setTransform(v.scale * dpr, 0, 0, -v.scale * dpr,
      (paint.w / 2 - v.cx * v.scale) * dpr, (paint.h / 2 + v.cy * v.scale) * dpr);
    const screen = () => ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const pixel = 1 / v.scale;
    for (const name of layer.classes || []) seen.add(name);
    const xs = layer.x || [], ys = layer.y || [];
    if (layer.kind === "boxes") {
      world();
      ctx.lineWidth = pixel;
      for (let i = 0; i < xs.length; i++) {
        const yaw = (layer.yaw ? layer.yaw[i] : 0) * Math.PI / 180;
        const c = Math.cos(yaw), s = Math.sin(yaw);
        const l = (layer.length ? layer.length[i] : 1) / 2;
        const b = (layer.width ? layer.width[i] : 1) / 2;
        ctx.beginPath();
        for (const [dx, dy] of [[l, b], [-l, b], [-l, -b], [l, -b]]) {
          ctx.lineTo(xs[i] + dx * c - dy * s, ys[i] + dx * s + dy * c);
        }
        ctx.closePath();
        ctx.fillStyle = classColour(layer, i);
        ctx.globalAlpha = 0.7;
        ctx.fill();
        ctx.globalAlpha = 1;
        ctx.strokeStyle = "#222";
        ctx.moveTo(xs[i], ys[i]);
        ctx.lineTo(xs[i] + l * c, ys[i] + l * s);  // the heading
        ctx.stroke();
      }
      counts.boxes = (counts.boxes || 0) + xs.length;
    } else if (layer.kind === "points") {
      world();
      const size = 3 * pixel;
      let last = null;
      for (let i = 0; i < xs.length; i++) {
        const fill = classColour(layer, i);
        if (fill !== last) ctx.fillStyle = last = fill;
        ctx.fillRect(xs[i] - size / 2, ys[i] - size / 2, size, size);
      }
      counts.points = (counts.points || 0) + xs.length;
    } else if (layer.kind === "lines") {
      world();
      ctx.lineWidth = 1.5 * pixel;
      const starts = layer.starts || [0];
      for (let k = 0; k < starts.length; k++) {
        const end = k + 1 < starts.length ? starts[k + 1] : xs.length;
        ctx.beginPath();
        for (let i = starts[k]; i < end; i++) ctx.lineTo(xs[i], ys[i]);
        ctx.strokeStyle = classColour(layer, k);
        ctx.stroke();
      }
      counts.lines = (counts.lines || 0) + starts.length;
    } else if (layer.kind === "markers") {
      screen();
      ctx.font = "11px system-ui, sans-serif";
      for (let i = 0; i < xs.length; i++) {
        const [sx, sy] = toScreen(xs[i], ys[i]);
        ctx.fillStyle = colour(layer.name);
        ctx.beginPath();
        ctx.moveTo(sx, sy - 6); ctx.lineTo(sx + 6, sy); ctx.lineTo(sx, sy + 6);
        ctx.lineTo(sx - 6, sy);
        ctx.fill();
        const label = layer.label ? layer.label[i] : null;
        if (label != null) { ctx.fillStyle = "#000"; ctx.fillText(String(label), sx + 8, sy + 4); }
      }
      counts.markers = (counts.markers || 0) + xs.length;
    } else if (layer.kind === "image" && layer.extent) {
      screen();
      const image = picture(layer);
      const [x0, y0, x1, y1] = layer.extent;
      const [left, top] = toScreen(x0, y1);
      if (image.complete && image.naturalWidth) {
        ctx.drawImage(image, left, top, (x1 - x0) * v.scale, (y1 - y0) * v.scale);
      }
      counts.images = (counts.images || 0) + 1;
    }
  }

  // An image layer's <img>, decoded once per data (a map is drawn on every frame).
  function picture(layer) {
    const data = layer.data && layer.data.b64 !== undefined ? layer.data.b64 : "";
    const key = `${layer.mime}:${data.length}:${data.slice(0, 64)}:${data.slice(-64)}`;
    let image = state.images.get(key);
    if (!image) {
      image = new Image();
      image.onload = () => drawScene();
      image.src = `data:${layer.mime || "image/png"};base64,${data}`;
      if (state.images.size > 64) state.images.clear();
      state.images.set(key, image);
    }
    return image;
  }

  function sideImages(scene, counts) {
    const box = $("images");
    box.replaceChildren();
    for (const layer of (scene || {}).layers || []) {
      if (layer.kind !== "image" || layer.extent) continue;
      const figure = document.createElement("figure");
      const image = document.createElement("img");
      image.alt = layer.name || "image";
      image.src = `data:${layer.mime || "image/png"};base64,${(layer.data || {}).b64 || ""}`;
      const caption = document.createElement("figcaption");
      caption.textContent = layer.name || "";
      figure.append(image, caption);
      box.append(figure);
      counts.images += 1;
    }
  }

  canvas.addEventListener("pointerdown", (event) => {
    if (!state.view) return;
    state.drag = { x: event.clientX, y: event.clientY, cx: state.view.cx, cy: state.view.cy };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    const drag = state.drag;
    if (!drag) return;
    $("follow").checked = false;
    state.view.cx = drag.cx - (event.clientX - drag.x) / state.view.scale;
    state.view.cy = drag.cy + (event.clientY - drag.y) / state.view.scale;
    drawScene();
  });
  canvas.addEventListener("pointerup", () => { state.drag = null; });
  canvas.addEventListener("wheel", (event) => {
    if (!state.view) return;
    event.preventDefault();
    const v = state.view;
    const rect = canvas.getBoundingClientRect();
    const mx = event.clientX - rect.left - rect.width / 2;
    const my = rect.height / 2 - (event.clientY - rect.top);
    const before = [v.cx + mx / v.scale, v.cy + my / v.scale];
    v.scale *= Math.exp(-event.deltaY * 0.0015);
    v.cx = before[0] - mx / v.scale;
    v.cy = before[1] - my / v.scale;
    drawScene();
  }, { passive: false });
  window.addEventListener("resize", () => { if (state.summary) drawScene(); });

  // -- series plots -----------------------------------------------------------------------

  async function fields() {
    const kind = $("series-kind").value;
    const select = $("series-field");
    select.replaceChildren();
    if (!kind) return;
    try {
      const answer = await api(`/api/fields?kind=${encodeURIComponent(kind)}`);
      for (const field of answer.fields) select.append(new Option(field, field));
    } catch (error) { say(error); }
  }

  async function addPlot(kind, field) {
    const box = document.createElement("div");
    box.className = "plot";
    const plotCanvas = document.createElement("canvas");
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = `${kind} · ${field}`;
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "×";
    box.append(plotCanvas, name, close);
    $("plots").append(box);
    const plot = { kind, field, canvas: plotCanvas, data: null };
    state.plots.push(plot);
    close.onclick = () => { box.remove(); state.plots = state.plots.filter((p) => p !== plot); };
    plotCanvas.addEventListener("click", async (event) => {
      if (!plot.data) return;
      const rect = plotCanvas.getBoundingClientRect();
      const t = (event.clientX - rect.left) / rect.width * plot.data.t1;
      try { seek((await api(`/api/at?t=${t}`)).number); } catch (error) { say(error); }
    });
    const width = Math.max(1, Math.round(plotCanvas.clientWidth));
    try {
      plot.data = await api(`/api/series?kind=${encodeURIComponent(kind)}` +
        `&field=${encodeURIComponent(field)}&width=${width}`);
      name.textContent += plot.data.sampled ? " (sampled)" : "";
      box.dataset.rows = String(plot.data.rows);
    } catch (error) { say(error); }
    drawPlot(plot);
    return plot;
  }

  function drawPlot(plot) {
    const c = plot.canvas;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(c.clientWidth * dpr);
    c.height = Math.round(c.clientHeight * dpr);
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const w = c.clientWidth, h = c.clientHeight;
    ctx.clearRect(0, 0, w, h);
    const data = plot.data;
    if (!data) return;
    let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < data.width; i++) {
      if (data.min[i] !== null) { lo = Math.min(lo, data.min[i]); hi = Math.max(hi, data.max[i]); }
    }
    if (isFinite(lo)) {
      if (hi === lo) { hi += 1; lo -= 1; }
      const y = (value) => h - 4 - (value - lo) / (hi - lo) * (h - 18);
      const x = (i) => (i + 0.5) * w / data.width;
      // the min/max envelope: max left to right, min back, filled (a single value a column
      // is a line); columns without values are bridged
      const kept = [];
      for (let i = 0; i < data.width; i++) if (data.min[i] !== null) kept.push(i);
      ctx.beginPath();
      for (const i of kept) ctx.lineTo(x(i), y(data.max[i]) - 0.5);
      for (const i of kept.reverse()) ctx.lineTo(x(i), y(data.min[i]) + 0.5);
      ctx.closePath();
      ctx.fillStyle = "rgba(21, 101, 192, 0.35)";
      ctx.strokeStyle = "#1565c0";
      ctx.fill();
      ctx.stroke();
      ctx.fillStyle = "#555";
      ctx.font = "10px system-ui, sans-serif";
      ctx.fillText(String(+hi.toPrecision(6)), 4, 24);
      ctx.fillText(String(+lo.toPrecision(6)), 4, h - 4);
    }
    if (state.time != null && data.t1 > 0) {
      ctx.strokeStyle = "#d81b60";
      ctx.beginPath();
      ctx.moveTo(state.time / data.t1 * w, 0);
      ctx.lineTo(state.time / data.t1 * w, h);
      ctx.stroke();
    }
  }

  // -- playing ----------------------------------------------------------------------------

  async function play() {
    const token = {};  // a stop then play while this loop awaits must not run two loops
    state.playing = token;
    $("play").textContent = "⏸";
    let anchor = null;
    let rate = 0;
    let asked = state.want;
    while (state.playing === token) {
      // a new rate, or the user seeking meanwhile: play on from where the page is
      if (Number($("rate").value) !== rate || anchor === null || state.want !== asked) {
        rate = Number($("rate").value);
        anchor = { wall: performance.now(), t: state.time || 0 };
        asked = state.want;
      }
      const t = anchor.t + (performance.now() - anchor.wall) / 1000 * rate;
      if (t > state.summary.duration) {  // the end: its last message, then stop
        await seek(state.summary.messages - 1);
        break;
      }
      try {
        const at = await api(`/api/at?t=${t}`);
        if (state.want !== asked) continue;
        asked = at.number;
        if (at.number !== state.number) await seek(at.number);
        else await new Promise((resolve) => requestAnimationFrame(resolve));
      } catch (error) { say(error); break; }
    }
    if (state.playing === token) stop();
  }

  function stop() {
    state.playing = false;
    $("play").textContent = "▶";
  }

  // -- controls ---------------------------------------------------------------------------

  timeline.addEventListener("input", () => seek(Number(timeline.value)));
  $("back").onclick = () => seek(state.want - 1);
  $("forward").onclick = () => seek(state.want + 1);
  $("play").onclick = () => (state.playing ? stop() : play());
  $("series-kind").addEventListener("change", fields);
  $("series-add").onclick = () => {
    const kind = $("series-kind").value, field = $("series-field").value;
    if (kind && field) addPlot(kind, field);
  };
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target === timeline || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) return;
    if (event.key === "ArrowLeft") seek(state.want - 1);
    else if (event.key === "ArrowRight") seek(state.want + 1);
    else if (event.key === " ") (state.playing ? stop() : play());
    else return;
    event.preventDefault();
  });

  function kinds(summary) {
    const body = $("kinds").tBodies[0];
    for (const kind of summary.kinds) {
      const row = body.insertRow();
      row.insertCell().textContent = kind.name;
      row.insertCell().textContent = String(kind.count);
      row.insertCell().textContent = kind.rate == null ? "–" : `${kind.rate.toFixed(2)} Hz`;
    }
    for (const kind of summary.table_kinds) $("series-kind").append(new Option(kind, kind));
  }

  // Message 0 and its scene asked with the summary, not after it (the summary says whether
  // there is a scene: a recording without one answers 404, unread).
  function early() {
    const asked = { n: 0, message: api("/api/message/0"), scene: api("/api/scene/0") };
    asked.message.catch(() => {});
    asked.scene.catch(() => {});
    return asked;
  }

  async function start() {
    try {
      state.early = early();
      const summary = await api("/api/summary");
      state.summary = summary;
      document.title = `${summary.name} · nanorec view`;
      $("title").textContent = summary.name;
      $("facts").textContent = `${summary.format} · ${summary.messages} messages · ` +
        `${fmt(summary.duration)} s`;
      timeline.max = String(Math.max(0, summary.messages - 1));
      kinds(summary);
      $("no-scene").hidden = summary.viewable;
      $("follow-box").hidden = !summary.viewable;
      // The first message is painted, then the overview (a long recording's whole paths:
      // 0.7 s of server CPU on a 1 GB CARLA archive) and the plot's fields asked: asked
      // together, the server's threads raced for its lock and the overview could come first.
      if (summary.messages) await seek(0);
      document.body.dataset.painted = "1";
      fields();
      if (summary.viewable) {
        state.overview = decodeLayers(await api("/api/overview"));
        state.view = null;  // framed on the overview's bounds
        drawScene();
      }
      document.body.dataset.ready = "1";
    } catch (error) { say(error); }
  }

  window.nanorecView = { seek, addPlot, state };
  start();
})();
