// A drawing board on a 0-255 canvas: renders segments or polylines, takes mouse, pen and touch
// input through pointer events. Modes: "line" (Kontour: press-drag-release = one straight line,
// snapped by snap.js), "free" (Pictomania), "view".

import { MIN_LINE, lineTo, snapEnd } from "./snap.js";

export const SIZE = 255;
const MIN_STEP = 1.5;     // free drawing keeps points at least this far apart
const ANIMATE_MS = 350;   // a new stroke by someone else is drawn over this long

export class Board {
  constructor(canvas, { mode = "view", color = "#1f2937", width = 3, onStroke = null, maxPoints = 1000 } = {}) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.mode = mode;
    this.color = color;
    this.width = width;
    this.onStroke = onStroke;
    this.maxPoints = maxPoints;
    this.lines = [];        // polylines [[x, y], ...] from the server
    this.pending = [];      // strokes sent, not echoed yet
    this.current = null;    // the stroke under the pointer
    this.animating = new Map(); // index -> start time
    this.enabled = mode !== "view";
    canvas.classList.add("board");
    this.resize();
    new ResizeObserver(() => this.resize()).observe(canvas);
    if (mode !== "view") this.listen();
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(this.canvas.clientWidth * ratio));
    if (this.canvas.width !== w) {
      this.canvas.width = w;
      this.canvas.height = w;
      this.render();
    }
  }

  clearPending() {
    this.pending = [];
    this.render();
  }

  setEnabled(on) {
    this.enabled = on && this.mode !== "view";
    this.canvas.classList.toggle("enabled", this.enabled);
    if (!this.enabled && this.current) { // the turn ended mid-drag: drop the preview line
      this.current = null;
      this.render();
    }
  }

  // Kontour segments {x0, y0, x1, y1} or polylines [[x, y], ...]; new ones are animated.
  setLines(lines, animate = true) {
    const polylines = lines.map((s) => (Array.isArray(s) ? s : [[s.x0, s.y0], [s.x1, s.y1]]));
    const now = performance.now();
    if (animate) {
      for (let i = this.lines.length; i < polylines.length; i++) this.animating.set(i, now);
    }
    if (polylines.length < this.lines.length) this.animating.clear();
    this.lines = polylines;
    this.pending = [];
    this.render();
    if (this.animating.size) this.tick();
  }

  tick() {
    requestAnimationFrame(() => {
      const now = performance.now();
      for (const [i, t] of this.animating) if (now - t > ANIMATE_MS) this.animating.delete(i);
      this.render();
      if (this.animating.size) this.tick();
    });
  }

  toCanvas(event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = ((event.clientX - rect.left) / rect.width) * SIZE;
    const y = ((event.clientY - rect.top) / rect.height) * SIZE;
    return [Math.max(0, Math.min(SIZE, x)), Math.max(0, Math.min(SIZE, y))];
  }

  listen() {
    const c = this.canvas;
    c.addEventListener("pointerdown", (e) => {
      if (!this.enabled || (e.pointerType === "mouse" && e.button !== 0)) return;
      e.preventDefault();
      c.setPointerCapture(e.pointerId);
      const raw = this.toCanvas(e);
      const p = this.mode === "line" ? this.snapEnd(raw) : raw;
      this.current = [p, p];
      this.rawStart = raw;
    });
    c.addEventListener("pointermove", (e) => {
      if (!this.current) return;
      e.preventDefault();
      const p = this.toCanvas(e);
      if (this.mode === "line") this.current = this.lineTo(this.current[0], p);
      else {
        const last = this.current[this.current.length - 1];
        if (Math.hypot(p[0] - last[0], p[1] - last[1]) >= MIN_STEP) this.current.push(p);
      }
      this.render();
    });
    const finish = (e) => {
      if (!this.current) return;
      const stroke = this.current;
      this.current = null;
      if (this.mode === "line") {
        const [a, b] = this.lineTo(stroke[0], this.toCanvas(e));
        stroke[0] = a;
        stroke[1] = b;
        if (Math.hypot(b[0] - a[0], b[1] - a[1]) < MIN_LINE) { this.render(); return; }
      }
      this.send(stroke.length > 1 ? stroke : [stroke[0], [stroke[0][0] + 0.5, stroke[0][1]]]);
    };
    c.addEventListener("pointerup", finish);
    c.addEventListener("pointercancel", () => { this.current = null; this.render(); });
  }

  send(stroke) {
    let points = stroke.map(([x, y]) => [Math.round(x * 10) / 10, Math.round(y * 10) / 10]);
    if (points.length > this.maxPoints) {
      const step = points.length / this.maxPoints;
      points = Array.from({ length: this.maxPoints }, (_, i) => points[Math.floor(i * step)]);
    }
    this.pending.push({ points });
    this.render();
    if (this.onStroke) this.onStroke(points);
  }

  snapEnd(p) { return snapEnd(this.lines, p); }

  // The line from the press to `p` (snap.js: ends joined, straightened, never pulled onto the
  // ends of a line it lies along).
  lineTo(a, p) { return lineTo(this.lines, this.rawStart || a, p); }

  render() {
    const { ctx, canvas } = this;
    const k = canvas.width / SIZE;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(k, 0, 0, k, 0, 0);
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    const now = performance.now();
    this.lines.forEach((line, i) => {
      const started = this.animating.get(i);
      const share = started === undefined ? 1 : Math.min(1, (now - started) / ANIMATE_MS);
      this.stroke(line, this.color, this.width, share);
    });
    for (const p of this.pending) this.stroke(p.points, "#6b7280", this.width);
    if (this.current) {
      ctx.setLineDash(this.mode === "line" ? [6, 5] : []);
      this.stroke(this.current, this.mode === "line" ? "#2563eb" : this.color, this.width);
      ctx.setLineDash([]);
    }
  }

  stroke(points, color, width, share = 1) {
    const { ctx } = this;
    if (!points.length) return;
    let keep = points;
    if (share < 1) {
      const total = pathLength(points) * share;
      keep = [points[0]];
      let run = 0;
      for (let i = 1; i < points.length; i++) {
        const [a, b] = [points[i - 1], points[i]];
        const d = Math.hypot(b[0] - a[0], b[1] - a[1]);
        if (run + d >= total) {
          const t = d ? (total - run) / d : 0;
          keep.push([a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t]);
          break;
        }
        keep.push(b);
        run += d;
      }
    }
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.beginPath();
    ctx.moveTo(keep[0][0], keep[0][1]);
    for (const [x, y] of keep.slice(1)) ctx.lineTo(x, y);
    if (keep.length === 1) ctx.lineTo(keep[0][0] + 0.1, keep[0][1]);
    ctx.stroke();
  }
}

function pathLength(points) {
  let total = 0;
  for (let i = 1; i < points.length; i++) {
    total += Math.hypot(points[i][0] - points[i - 1][0], points[i][1] - points[i - 1][1]);
  }
  return total;
}

// Draw `lines` again on a view board one stroke after another, `stepMs` apart (the recap's
// « Revoir »); the canvas's data-shown says how many strokes are on it.
export function replay(board, lines, stepMs = 300) {
  clearTimeout(board.replaying);
  let shown = 0;
  const step = () => {
    board.setLines(lines.slice(0, shown), true);
    board.canvas.dataset.shown = String(shown);
    if (shown < lines.length) {
      shown += 1;
      board.replaying = setTimeout(step, shown === 1 ? stepMs / 2 : stepMs);
    }
  };
  step();
}

// A picture of drawings side by side, each under its caption (the recap's shared image): a PNG
// data URL. `items`: [{title, caption, lines}] with lines as polylines on the 0-255 canvas.
export function recapPicture(heading, items, size = 220) {
  const pad = 16, head = 44, foot = 56;
  const canvas = document.createElement("canvas");
  canvas.width = pad + items.length * (size + pad);
  canvas.height = head + size + foot;
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fbf8f1";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#1f2937";
  ctx.font = "bold 20px sans-serif";
  ctx.fillText(heading, pad, 29);
  items.forEach((item, i) => {
    const x = pad + i * (size + pad), y = head;
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(x, y, size, size);
    ctx.strokeStyle = "#e5e0d5";
    ctx.lineWidth = 1;
    ctx.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
    ctx.strokeStyle = "#1f2937";
    ctx.lineWidth = 3;
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    const k = size / SIZE;
    for (const line of item.lines) {
      const points = Array.isArray(line) ? line : [[line.x0, line.y0], [line.x1, line.y1]];
      ctx.beginPath();
      points.forEach(([px, py], j) => (j ? ctx.lineTo(x + px * k, y + py * k) : ctx.moveTo(x + px * k, y + py * k)));
      if (points.length === 1) ctx.lineTo(x + points[0][0] * k + 0.5, y + points[0][1] * k);
      ctx.stroke();
    }
    ctx.fillStyle = "#1f2937";
    ctx.font = "bold 15px sans-serif";
    ctx.fillText(item.title, x, y + size + 22, size);
    ctx.fillStyle = "#6b7280";
    ctx.font = "14px sans-serif";
    ctx.fillText(item.caption, x, y + size + 42, size);
  });
  return canvas.toDataURL("image/png");
}

// Offer a data URL as a file download.
export function download(url, filename) {
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
}
