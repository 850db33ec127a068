// Griffon bot client: seats Griffon's guessing bot in a drawing-game room over `WS /v1/bot`.
// One ES module, no dependency, no build step: the browser's WebSocket, or Node >= 22's global one
// (Node 20: `node --experimental-websocket`, or pass `{WebSocket}` from a package such as `ws`).
// Protocol: docs/BOT_PROTOCOL.md. Usage and every option: README.md next to this file.

export const PROTOCOL = "griffon-bot";
export const VERSIONS = Object.freeze([2, 1]);

/** Close codes after which the client does not reconnect (the server meant it). */
const FINAL_CLOSE_CODES = new Set([1000, 1002, 1003, 1007, 1008, 1009, 1010, 4401, 4403, 4408, 4429]);
/** Error codes received before `welcome` that end the connection attempt. */
const REFUSALS = new Set([
  "unsupported_version", "key_required", "bad_key", "key_revoked", "quota_exceeded", "server_full",
  "overloaded", "already_greeted",
]);
const DEFAULT_LIMITS = Object.freeze({
  max_points: 4000, max_stroke_points: 1000, max_strokes: 1000, max_frame_bytes: 262144,
});
const POINTS_PER_FRAME = 500; // a long `points` call is sent as several frames of at most this many points
const DEFAULTS = Object.freeze({
  reconnect: true, maxRetries: 6, retryDelayMs: 250, maxRetryDelayMs: 8000, maxQueue: 1000,
  replay: true, connectTimeoutMs: 15000, analysis: false, y: "down",
});

/** An error of the bot or of this client: `code` is the error frame's code (docs/BOT_PROTOCOL.md,
 * Errors) or one of this client's (`not_connected`, `connect_failed`, `closed`, `queue_full`,
 * `timeout`, and the server's codes when the client refuses a frame before sending it). */
export class GriffonBotError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.name = "GriffonBotError";
    this.code = code;
    this.ref = extra.ref;
    this.retryAfter = extra.retryAfter;
    this.closeCode = extra.closeCode;
    this.local = Boolean(extra.local);
    this.frame = extra.frame;
  }
}

const fail = (code, message) => new GriffonBotError(code, message, { local: true });

function checkNumbers(name, values) {
  if (!Array.isArray(values)) throw fail("invalid_frame", `${name} must be an array of numbers`);
  for (const v of values) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw fail("invalid_frame", `${name} holds ${v}: every number must be finite`);
    }
  }
}

function checkPoint(x, y, t) {
  checkNumbers("x", [x]);
  checkNumbers("y", [y]);
  if (t !== undefined && t !== null) checkNumbers("t", [t]);
}

/** A room's seat for the bot. Create it with `connect(url, options)`. */
export class GriffonBot {
  constructor(url, options = {}) {
    this.url = url;
    this.options = { ...DEFAULTS, ...options };
    if (!["down", "up"].includes(this.options.y)) throw fail("invalid_frame", 'y must be "down" or "up"');
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") {
      throw fail("connect_failed", "no WebSocket here: pass options.WebSocket (Node < 22: the `ws` package)");
    }
    this.welcome = null;
    this.version = null;
    this.limits = { ...DEFAULT_LIMITS };
    this.state = "new"; // new, connecting, open, reconnecting, closing, closed
    this.round = null; // {start, strokes: [[xs, ys, ts]...], open: [xs, ys, ts] | null, points}
    this.queue = [];
    this.listeners = new Map();
    this.pending = new Map(); // frame id -> {resolve, reject, until}
    this.nextId = 1;
    this.ws = null;
    this.attempt = 0;
    this.resumeToken = null;
    this.flipY = false;
    this.closed = null;
  }

  // -- events ---------------------------------------------------------------------------------
  /** Listen to `type` (welcome, roundReady, guess, analysis, roundOver, error, close, resumed,
   * reconnecting, frame; the bot's drawing turn: drawStart, drawPoints, drawStrokeEnd, drawDone,
   * drawDeclined); returns a function that removes the listener. */
  on(type, listener) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(listener);
    return () => this.off(type, listener);
  }

  off(type, listener) {
    this.listeners.get(type)?.delete(listener);
  }

  once(type, listener) {
    const remove = this.on(type, (value) => { remove(); listener(value); });
    return remove;
  }

  emit(type, value) {
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        listener(value);
      } catch (error) {
        queueMicrotask(() => { throw error; }); // a listener's bug must not break the client
      }
    }
  }

  // -- connection -----------------------------------------------------------------------------
  /** Open the socket and greet; resolves with the `welcome` frame. */
  open() {
    this.state = "connecting";
    return this.dial(null);
  }

  dial(resume) {
    return new Promise((resolve, reject) => {
      let ws;
      try {
        ws = new this.WebSocket(this.url);
      } catch (error) {
        reject(new GriffonBotError("connect_failed", String(error?.message ?? error)));
        return;
      }
      this.ws = ws;
      let greeted = false;
      let refusal = null;
      let legacyHello = this.version === 1; // known from an earlier welcome
      let timer = setTimeout(() => {
        refusal = new GriffonBotError("timeout", `no welcome within ${this.options.connectTimeoutMs} ms`);
        ws.close();
      }, this.options.connectTimeoutMs);
      ws.onopen = () => ws.send(JSON.stringify(this.hello(resume, legacyHello)));
      ws.onmessage = (event) => {
        if (ws !== this.ws) return;
        let frame;
        try {
          frame = JSON.parse(event.data);
        } catch {
          return;
        }
        if (greeted) {
          this.receive(frame);
          return;
        }
        if (frame.type === "welcome") {
          greeted = true;
          clearTimeout(timer);
          if (this.state === "closed") { // closed by the room while this attempt was under way
            ws.close(1000);
            return;
          }
          this.greeted(frame);
          resolve(frame);
          return;
        }
        if (frame.type === "error") {
          const error = this.toError(frame);
          if (frame.code === "invalid_frame" && !legacyHello && !resume) {
            legacyHello = true; // a server of version 1 only: it refuses the fields of version 2
            ws.send(JSON.stringify(this.hello(null, true)));
            return;
          }
          this.emit("error", error);
          if (REFUSALS.has(frame.code) || frame.code === "invalid_frame") {
            refusal = error; // the server closes the socket with its code, or this client does soon
            clearTimeout(timer);
            timer = setTimeout(() => ws.close(1000), 1000);
          }
        }
      };
      ws.onclose = (event) => {
        clearTimeout(timer);
        if (ws !== this.ws) return;
        if (!greeted) {
          if (refusal) refusal.closeCode = event.code;
          reject(refusal ?? new GriffonBotError("connect_failed",
            `the socket closed before welcome (code ${event.code})`, { closeCode: event.code }));
          return;
        }
        this.dropped(event);
      };
      ws.onerror = () => {}; // a close event follows, with its code
    });
  }

  hello(resume, legacy) {
    const o = this.options;
    const frame = { type: "hello", versions: legacy ? [1] : [...VERSIONS] };
    if (o.room !== undefined) frame.room = o.room;
    if (o.name !== undefined) frame.name = o.name;
    if (o.analysis) frame.analysis = true;
    if (!legacy) {
      if (o.key !== undefined) frame.key = o.key;
      frame.y = o.y;
      if (resume) frame.resume = resume;
    }
    return frame;
  }

  greeted(welcome) {
    const resumed = this.welcome !== null;
    this.welcome = welcome;
    this.version = welcome.version;
    this.limits = { ...DEFAULT_LIMITS, ...(welcome.limits ?? {}) };
    this.resumeToken = welcome.resume_token ?? null;
    this.flipY = this.options.y === "up" && welcome.y !== "up"; // version 1 assumes y down
    this.state = "open";
    this.attempt = 0;
    this.emit("welcome", welcome);
    if (resumed) this.afterReconnect(welcome);
  }

  receive(frame) {
    this.emit("frame", frame);
    const waiting = frame.ref !== undefined ? this.pending.get(frame.ref) : undefined;
    switch (frame.type) {
      case "round_ready":
        this.settleFirst("round_ready", frame);
        this.emit("roundReady", frame);
        break;
      case "guess":
        this.emit("guess", frame);
        break;
      case "analysis":
        this.emit("analysis", frame);
        break;
      case "round_over":
        if (frame.why !== "replaced") this.settleFirst("round_over", frame);
        this.emit("roundOver", frame);
        break;
      case "pong":
        this.settle(frame.ref, frame);
        break;
      case "draw_start":
      case "draw_declined":
        this.settleFirst(frame.type, frame);
        this.emit(frame.type === "draw_start" ? "drawStart" : "drawDeclined", frame);
        break;
      case "draw_points":
        this.emit("drawPoints", frame);
        break;
      case "draw_stroke_end":
        this.emit("drawStrokeEnd", frame);
        break;
      case "draw_done":
        this.emit("drawDone", frame);
        break;
      case "error": {
        const error = this.toError(frame);
        if (waiting) {
          this.pending.delete(frame.ref);
          waiting.reject(error);
        }
        this.emit("error", error);
        break;
      }
      default:
        break;
    }
  }

  toError(frame) {
    return new GriffonBotError(frame.code ?? "unknown", frame.message ?? "", {
      ref: frame.ref, retryAfter: frame.retry_after, frame,
    });
  }

  /** Resolve the oldest request waiting for `until` (the server echoes no `ref` on replies). */
  settleFirst(until, frame) {
    for (const [id, entry] of this.pending) {
      if (entry.until === until || (Array.isArray(entry.until) && entry.until.includes(until))) {
        this.settle(id, frame);
        return;
      }
    }
  }

  settle(ref, frame) {
    const entry = ref !== undefined ? this.pending.get(ref) : undefined;
    if (entry) {
      this.pending.delete(ref);
      entry.resolve(frame);
    }
  }

  dropped(event) {
    const final = FINAL_CLOSE_CODES.has(event.code) || this.state === "closing" || !this.options.reconnect;
    if (final || this.state === "closed") {
      this.finish(event.code, event.reason);
      return;
    }
    this.state = "reconnecting";
    const open = this.round?.open;
    this.snapshot = this.round && {
      start: this.round.start, strokes: this.round.strokes.slice(),
      open: open && [open[0].slice(), open[1].slice(), open[2] && open[2].slice()],
    };
    this.retry(event.code);
  }

  retry(lastCode) {
    if (this.state !== "reconnecting") return;
    if (this.attempt >= this.options.maxRetries) {
      this.emit("error", new GriffonBotError("connect_failed",
        `could not reconnect after ${this.attempt} attempts`, { closeCode: lastCode }));
      this.finish(lastCode, "reconnect failed");
      return;
    }
    const delay = Math.min(this.options.maxRetryDelayMs, this.options.retryDelayMs * 2 ** this.attempt);
    const wait = delay * (0.8 + 0.4 * Math.random());
    this.attempt += 1;
    this.emit("reconnecting", { attempt: this.attempt, delayMs: Math.round(wait), closeCode: lastCode });
    setTimeout(() => {
      if (this.state !== "reconnecting") return;
      const resume = this.resumeToken ? { session: this.welcome.session, token: this.resumeToken } : null;
      this.dial(resume).catch((error) => {
        if (REFUSALS.has(error.code) && error.code !== "overloaded" && error.code !== "server_full") {
          this.finish(error.closeCode ?? 1006, error.message);
        } else {
          this.retry(error.closeCode ?? lastCode);
        }
      });
    }, wait);
  }

  /** After a reconnect: bring the bot's view of the round back to the room's, then send what waited. */
  afterReconnect(welcome) {
    const snap = this.snapshot;
    this.snapshot = null;
    const there = welcome.resumed ? welcome.round : null;
    if (snap && this.options.replay) {
      const sameRound = there && String(there.round) === String(snap.start.round);
      let from = 0;
      if (!sameRound) {
        this.raw(snap.start);
      } else if (there.strokes <= snap.strokes.length) {
        from = there.strokes; // the strokes lost in flight are sent again
      } else {
        this.raw({ type: "clear" });
      }
      for (const stroke of snap.strokes.slice(from)) this.raw({ type: "stroke", stroke: this.wire(stroke) });
      if (snap.open) {
        const [xs, ys, ts] = snap.open;
        this.raw({ type: "stroke_start", x: xs[0], y: this.y(ys[0]), ...(ts ? { t: ts[0] } : {}) });
        if (xs.length > 1) this.sendPoints(xs.slice(1), ys.slice(1), ts ? ts.slice(1) : undefined);
      }
    }
    const queued = this.queue;
    this.queue = [];
    for (const frame of queued) this.raw(frame);
    this.emit("resumed", { resumed: Boolean(welcome.resumed), round: there ?? null, welcome });
  }

  finish(code, reason) {
    if (this.state === "closed") return;
    this.state = "closed";
    this.closed = { code, reason: reason ?? "" };
    clearTimeout(this.byeTimer);
    for (const entry of this.pending.values()) {
      entry.reject(new GriffonBotError("closed", "the connection closed", { closeCode: code }));
    }
    this.pending.clear();
    this.emit("close", this.closed);
  }

  // -- sending --------------------------------------------------------------------------------
  /** Send one frame as it is (no check): tests and protocol features this client lacks. */
  raw(frame) {
    const text = typeof frame === "string" ? frame : JSON.stringify(frame);
    if (this.state === "reconnecting") {
      if (this.queue.length >= this.options.maxQueue) {
        this.emit("error", fail("queue_full", `more than ${this.options.maxQueue} frames wait for the socket`));
        return;
      }
      this.queue.push(frame);
      return;
    }
    if (this.state !== "open" && this.state !== "closing") {
      throw fail("not_connected", `the client is ${this.state}`);
    }
    this.ws.send(text);
  }

  send(frame) {
    const text = JSON.stringify(frame);
    const bytes = text.length * 3 > this.limits.max_frame_bytes ? new TextEncoder().encode(text).length : 0;
    if (bytes > this.limits.max_frame_bytes) {
      throw fail("frame_too_large", `a frame holds at most ${this.limits.max_frame_bytes} bytes`);
    }
    this.raw(frame);
  }

  request(frame, until) {
    const id = `c${this.nextId++}`;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, until });
      try {
        this.send({ ...frame, id });
      } catch (error) {
        this.pending.delete(id);
        reject(error);
      }
    });
  }

  y(value) {
    return this.flipY ? -value : value;
  }

  /** A stroke as the bot reads it (y flipped for a bot that assumes y down when the room's is up). */
  wire(stroke) {
    const [xs, ys, ts] = stroke;
    const sent = [xs, this.flipY ? ys.map((v) => -v) : ys];
    if (ts) sent.push(ts);
    return sent;
  }

  needRound() {
    if (!this.round) throw fail("no_round", "start a round first (startRound)");
  }

  countPoints(n) {
    const { max_points: maxPoints } = this.limits;
    if (this.round.points + n > maxPoints) {
      throw fail("too_many_points", `a drawing holds at most ${maxPoints} points`);
    }
  }

  /** A round begins; resolves with `round_ready` (its `unknown`: the candidates the bot cannot
   * guess, ignored). `pace`, `reactionS` and `holdS` are sent to servers of version 2 only. */
  startRound({ round, candidates, game, language, difficulty, pace, durationS, seed, reactionS, holdS } = {}) {
    if (round === undefined || round === null || round === "") throw fail("invalid_frame", "round is required");
    const frame = { type: "round_start", round };
    if (candidates !== undefined) frame.candidates = candidates;
    if (game !== undefined) frame.game = game;
    if (language !== undefined) frame.language = language;
    if (difficulty !== undefined) frame.difficulty = difficulty;
    if (durationS !== undefined) frame.duration_s = durationS;
    if (seed !== undefined) frame.seed = seed;
    if (pace !== undefined && this.version >= 2) frame.pace = pace;
    if (reactionS !== undefined && this.version >= 2) frame.reaction_s = reactionS;
    if (holdS !== undefined && this.version >= 2) frame.hold_s = holdS;
    this.round = { start: frame, strokes: [], open: null, points: 0 };
    return this.request(frame, "round_ready");
  }

  /** A stroke begins at (x, y), `t` in ms (optional). */
  strokeStart(x, y, t) {
    this.needRound();
    checkPoint(x, y, t);
    if (this.round.open) throw fail("stroke_open", "a stroke is open: strokeEnd first");
    this.countPoints(1);
    const timed = t !== undefined && t !== null;
    this.round.open = [[x], [y], timed ? [t] : null];
    this.round.points += 1;
    this.send({ type: "stroke_start", x, y: this.y(y), ...(timed ? { t } : {}) });
  }

  /** More points of the open stroke (split into frames of at most 500 points). */
  points(xs, ys, ts) {
    this.needRound();
    const open = this.round.open;
    if (!open) throw fail("no_stroke", "no open stroke: strokeStart first");
    checkNumbers("x", xs);
    checkNumbers("y", ys);
    if (ts !== undefined && ts !== null) checkNumbers("t", ts);
    if (xs.length !== ys.length || (ts && ts.length !== xs.length)) {
      throw fail("invalid_frame", "x, y (and t) must have the same length");
    }
    if (xs.length === 0) return;
    const maxStroke = this.limits.max_stroke_points;
    if (open[0].length + xs.length > maxStroke) {
      throw fail("too_many_points", `a stroke holds at most ${maxStroke} points`);
    }
    this.countPoints(xs.length);
    open[0].push(...xs);
    open[1].push(...ys);
    if (open[2] && ts) open[2].push(...ts);
    else open[2] = null;
    this.round.points += xs.length;
    this.sendPoints(xs, ys, ts);
  }

  sendPoints(xs, ys, ts) {
    for (let i = 0; i < xs.length; i += POINTS_PER_FRAME) {
      const frame = { type: "points", x: xs.slice(i, i + POINTS_PER_FRAME),
        y: ys.slice(i, i + POINTS_PER_FRAME).map((v) => this.y(v)) };
      if (ts) frame.t = ts.slice(i, i + POINTS_PER_FRAME);
      this.send(frame);
    }
  }

  /** The open stroke is finished: the bot looks at the drawing. */
  strokeEnd() {
    this.needRound();
    if (!this.round.open) throw fail("no_stroke", "no open stroke to end");
    const [xs, ys, ts] = this.round.open;
    this.round.open = null;
    this.round.strokes.push(ts ? [xs, ys, ts] : [xs, ys]);
    this.send({ type: "stroke_end" });
  }

  /** A whole stroke at once (the same as strokeStart, points and strokeEnd). */
  stroke(xs, ys, ts) {
    this.needRound();
    if (this.round.open) throw fail("stroke_open", "a stroke is open: strokeEnd first");
    checkNumbers("x", xs);
    checkNumbers("y", ys);
    if (ts !== undefined && ts !== null) checkNumbers("t", ts);
    if (xs.length === 0 || xs.length !== ys.length || (ts && ts.length !== xs.length)) {
      throw fail("invalid_frame", "x, y (and t) must be non-empty and of the same length");
    }
    if (xs.length > this.limits.max_stroke_points) {
      throw fail("too_many_points", `a stroke holds at most ${this.limits.max_stroke_points} points`);
    }
    if (this.round.strokes.length >= this.limits.max_strokes) {
      throw fail("too_many_strokes", `a drawing holds at most ${this.limits.max_strokes} strokes`);
    }
    this.countPoints(xs.length);
    const stroke = ts ? [xs.slice(), ys.slice(), ts.slice()] : [xs.slice(), ys.slice()];
    this.round.strokes.push(stroke);
    this.round.points += xs.length;
    this.send({ type: "stroke", stroke: this.wire(stroke) });
  }

  /** The drawer removed the last stroke (an open stroke is dropped). */
  undo() {
    this.needRound();
    const gone = this.round.open ?? this.round.strokes.pop();
    this.round.open = null;
    if (gone) this.round.points -= gone[0].length;
    this.send({ type: "undo" });
  }

  /** The drawer erased stroke number `stroke` (from 0, among the strokes on the canvas) or every
   * point inside `region` ({x, y, w, h}, the room's units); version 2 (ignored by version 1). */
  erase({ stroke, region } = {}) {
    this.needRound();
    if ((stroke === undefined) === (region === undefined)) throw fail("invalid_frame", "erase: give stroke or region");
    if (this.round.open) throw fail("stroke_open", "a stroke is open: strokeEnd first");
    if (this.version < 2) return;
    const strokes = this.round.strokes;
    if (stroke !== undefined) {
      if (!Number.isInteger(stroke) || stroke < 0 || stroke >= strokes.length) {
        throw fail("no_stroke", `no stroke ${stroke} on the canvas (${strokes.length} strokes)`);
      }
      strokes.splice(stroke, 1);
    } else {
      checkNumbers("region", [region.x, region.y, region.w, region.h]);
      this.round.strokes = eraseRegion(strokes, region);
    }
    this.round.points = this.round.strokes.reduce((n, s) => n + s[0].length, 0);
    const frame = { type: "erase" };
    if (stroke !== undefined) frame.stroke = stroke;
    else frame.region = { x: region.x, y: region.y, w: region.w, h: region.h };
    this.send(frame);
  }

  /** The drawer filled an area: sent (the bot ignores it: fills change no line); version 2 only. */
  fill({ x, y, color } = {}) {
    if (this.version < 2) return;
    const frame = { type: "fill" };
    if (x !== undefined) frame.x = x;
    if (y !== undefined) frame.y = y;
    if (color !== undefined) frame.color = color;
    this.send(frame);
  }

  /** The bot's turn to draw `word` (version 2): resolves with `draw_start` — then the drawing comes
   * as drawPoints / drawStrokeEnd events and a drawDone — or with `draw_declined` at once when the
   * bot cannot draw it (the room skips its turn). */
  drawTurn({ turn, word, language, width, height, durationS, seed } = {}) {
    if (this.version < 2) return Promise.reject(fail("invalid_frame", "draw_turn needs protocol version 2"));
    if (typeof word !== "string" || !word) return Promise.reject(fail("invalid_frame", "word is required"));
    const frame = { type: "draw_turn", turn: turn ?? 1, word };
    if (language !== undefined) frame.language = language;
    if (width !== undefined) frame.width = width;
    if (height !== undefined) frame.height = height;
    if (durationS !== undefined) frame.duration_s = durationS;
    if (seed !== undefined) frame.seed = seed;
    return this.request(frame, ["draw_start", "draw_declined"]);
  }

  /** End the bot's drawing turn early (its drawDone says `stopped: true`). */
  drawStop() {
    this.send({ type: "draw_stop" });
  }

  /** Empty canvas: the bot forgets what it saw, but never repeats a word of this round. */
  clear() {
    this.needRound();
    Object.assign(this.round, { strokes: [], open: null, points: 0 });
    this.send({ type: "clear" });
  }

  /** Another player guessed `text` (`correct`: it was the answer). */
  playerGuess(text, { player, correct } = {}) {
    if (typeof text !== "string" || !text) throw fail("invalid_frame", "text must be a non-empty string");
    const frame = { type: "player_guess", text };
    if (player !== undefined) frame.player = player;
    if (correct !== undefined) frame.correct = Boolean(correct);
    this.send(frame);
  }

  /** The room's judgement of one bot guess; `gesture`: "proche" or "hors_sujet". */
  verdict(guessId, { correct, gesture } = {}) {
    if (!Number.isInteger(guessId) || guessId < 1) throw fail("invalid_frame", "guessId must be an integer >= 1");
    const frame = { type: "verdict", guess_id: guessId };
    if (correct !== undefined) frame.correct = Boolean(correct);
    if (gesture !== undefined) frame.gesture = gesture;
    this.send(frame);
  }

  /** The round is over; resolves with `round_over`. */
  endRound({ answer, drawingConsent } = {}) {
    const frame = { type: "round_end" };
    if (answer !== undefined) frame.answer = answer;
    if (drawingConsent !== undefined) frame.drawing_consent = Boolean(drawingConsent);
    this.round = null;
    return this.request(frame, "round_over");
  }

  /** Resolves with `pong`. */
  ping() {
    return this.request({ type: "ping" }, "pong");
  }

  /** Say bye and close; resolves once the socket is closed. */
  close() {
    if (this.state === "closed") return Promise.resolve(this.closed);
    const done = new Promise((resolve) => this.once("close", resolve));
    if (this.state === "open") {
      this.state = "closing";
      this.ws.send(JSON.stringify({ type: "bye" }));
      const ws = this.ws;
      this.byeTimer = setTimeout(() => ws.close(1000), this.options.connectTimeoutMs); // a server mute after bye
    } else {
      this.state = "closing";
      this.ws?.close(1000);
      this.finish(1000, "closed by the room");
    }
    return done;
  }

  /** Test hook and network-change helper: close the socket without bye, as a dropped network would. */
  drop() {
    if (this.state !== "open") return;
    const ws = this.ws;
    this.ws = null; // its close event is no longer this client's
    ws.close(4000, "dropped by the room");
    this.dropped({ code: 4000, reason: "dropped by the room" });
  }
}

/** The strokes without their points inside `region` ({x, y, w, h}): a stroke crossing it is cut
 * in two (as the server does with an `erase` frame). */
export function eraseRegion(strokes, { x, y, w, h }) {
  const out = [];
  const inside = (px, py) => px >= x && px <= x + w && py >= y && py <= y + h;
  for (const [xs, ys, ts] of strokes) {
    let run = [];
    const flush = () => {
      if (run.length) out.push(ts ? [run.map((i) => xs[i]), run.map((i) => ys[i]), run.map((i) => ts[i])]
        : [run.map((i) => xs[i]), run.map((i) => ys[i])]);
      run = [];
    };
    xs.forEach((px, i) => (inside(px, ys[i]) ? flush() : run.push(i)));
    flush();
  }
  return out;
}

/** Which words of a room's list the bot can guess, and under which categories: `POST
 * /v1/words/check` on the server of `url` (the bot's `ws://` URL or the server's `http://` one). */
export async function checkWords(url, words, { language = "fr", fetch: fetcher = globalThis.fetch } = {}) {
  const base = new URL(url);
  base.protocol = base.protocol === "wss:" ? "https:" : base.protocol === "ws:" ? "http:" : base.protocol;
  const reply = await fetcher(new URL("/v1/words/check", base), {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ words, language }),
  });
  const body = await reply.json();
  if (!reply.ok) throw new GriffonBotError(body.code ?? "bad_request", body.message ?? JSON.stringify(body));
  return body;
}

/** Connect to `url` (`ws://HOST:PORT/v1/bot`) and greet; resolves with a GriffonBot once welcomed. */
export async function connect(url, options = {}) {
  const bot = new GriffonBot(url, options);
  await bot.open();
  return bot;
}
