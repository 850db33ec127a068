// The Kontour line tool's snapping, as pure functions over the drawing's lines (polylines on the
// 0-255 canvas): the ends of a new line join earlier ends, nearly horizontal/vertical lines
// straighten, and a line laid along an earlier one (a ladder's next rung, a double line) keeps
// its ends where drawn rather than being pulled onto that line's ends. No DOM: board.js draws,
// tests/test_games_kontour_snap.py runs these in Node.

export const SNAP_END = 9;     // canvas units: an end this close to an earlier end joins it
export const SNAP_ANGLE = 5;   // degrees: nearly horizontal/vertical lines become exact
export const ALONG_ANGLE = 8;  // degrees: a line this close in direction to an earlier one…
export const ALONG_BAND = 18;  // …both its ends this close to that line, over it, lies along it
export const MIN_LINE = 6;     // shorter presses are ignored (the rules refuse dots)

const ends = (line) => [line[0], line[line.length - 1]];

// `p` moved onto the nearest earlier end within SNAP_END; the ends of the lines of `skip` (by
// index) are left out, and so is any other end at the same place (a corner they share).
export function snapEnd(lines, p, skip = new Set()) {
  const barred = [...skip].flatMap((i) => ends(lines[i]));
  const free = (q) => barred.every((r) => Math.hypot(q[0] - r[0], q[1] - r[1]) >= 1);
  let best = p, bestD = SNAP_END;
  lines.forEach((line, i) => {
    if (skip.has(i)) return;
    for (const q of ends(line).filter(free)) {
      const d = Math.hypot(q[0] - p[0], q[1] - p[1]);
      if (d < bestD) { best = [q[0], q[1]]; bestD = d; }
    }
  });
  return best;
}

// `p` as seen from `a`, made exactly horizontal or vertical when within SNAP_ANGLE of it.
export function snapAngle(a, p) {
  const angle = (Math.atan2(p[1] - a[1], p[0] - a[0]) * 180) / Math.PI;
  const off = ((angle % 90) + 90) % 90;
  if (off < SNAP_ANGLE || off > 90 - SNAP_ANGLE) {
    const horizontal = Math.abs(p[0] - a[0]) >= Math.abs(p[1] - a[1]);
    return horizontal ? [p[0], a[1]] : [a[0], p[1]];
  }
  return p;
}

// The indices of the straight lines that [a, b] lies along: within ALONG_ANGLE of their
// direction, both ends within `band` of their line, and over more than half of the shorter one.
export function linesAlong(lines, a, b, band = ALONG_BAND) {
  const found = new Set();
  const length = Math.hypot(b[0] - a[0], b[1] - a[1]);
  if (length < MIN_LINE) return found;
  lines.forEach((line, i) => {
    const [p, q] = ends(line);
    const span = Math.hypot(q[0] - p[0], q[1] - p[1]);
    if (line.length !== 2 || span < MIN_LINE) return;
    const cos = Math.abs(((b[0] - a[0]) * (q[0] - p[0]) + (b[1] - a[1]) * (q[1] - p[1])) / (length * span));
    if (cos < Math.cos((ALONG_ANGLE * Math.PI) / 180)) return;
    const ux = (q[0] - p[0]) / span, uy = (q[1] - p[1]) / span;
    const off = (r) => Math.abs((r[0] - p[0]) * uy - (r[1] - p[1]) * ux); // distance to its line
    if (off(a) > band || off(b) > band) return;
    const ta = (a[0] - p[0]) * ux + (a[1] - p[1]) * uy, tb = (b[0] - p[0]) * ux + (b[1] - p[1]) * uy;
    const overlap = Math.min(Math.max(ta, tb), span) - Math.max(Math.min(ta, tb), 0);
    if (overlap > 0.5 * Math.min(length, span)) found.add(i);
  });
  return found;
}

// The line the person means by pressing at `start` and releasing at `p`: its ends joined to
// earlier ends, straightened; but never pulled onto the ends of a line it lies along (drawn, it
// would be that line again — a « prolongement » that vanishes — or a zigzag across it).
export function lineTo(lines, start, p) {
  const along = linesAlong(lines, start, p);
  const a = snapEnd(lines, start, along);
  const end = snapEnd(lines, p, along);
  const b = end !== p ? end : snapAngle(a, p);
  if (linesAlong(lines, a, b, SNAP_END).size && !along.size) {
    return [start, snapAngle(start, p)]; // snapped, it would lie along a line the stroke did not
  }
  return [a, b];
}
