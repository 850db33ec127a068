// Types of griffon-bot.js: the bot client for drawing-game rooms (docs/BOT_PROTOCOL.md).

export declare const PROTOCOL: "griffon-bot";
export declare const VERSIONS: readonly number[];

/** Which way the room's y axis points: "down" (canvas, Quick, Draw!) or "up" (mathematical). */
export type YDirection = "down" | "up";
export type Pace = "instant" | "human";
export type Gesture = "proche" | "hors_sujet";

/** The server's error codes (docs/BOT_PROTOCOL.md, Errors) and this client's own. */
export type ErrorCode =
  | "bad_json" | "bad_frame" | "unknown_type" | "invalid_frame" | "binary_not_supported" | "frame_too_large"
  | "hello_first" | "already_greeted" | "unsupported_version" | "no_round" | "no_stroke" | "stroke_open"
  | "unknown_difficulty" | "unknown_guess" | "bad_drawing" | "too_many_points"
  | "too_many_strokes" | "overloaded" | "rate_limited" | "internal_error" | "flooding" | "idle_timeout"
  | "server_full" | "key_required" | "bad_key" | "key_revoked" | "quota_exceeded" | "resume_failed"
  // this client's
  | "not_connected" | "connect_failed" | "closed" | "queue_full" | "timeout"
  | (string & {});

export interface ConnectOptions {
  /** The room's API key (protocol v2; needed when the operator requires keys). */
  key?: string;
  /** The room's name, shown in transcripts. */
  room?: string;
  /** The bot's name in the room. */
  name?: string;
  /** The room's y direction (default "down"). */
  y?: YDirection;
  /** Ask for an `analysis` event after every stroke (default false). */
  analysis?: boolean;
  /** Reconnect (and resume) after a dropped socket (default true). */
  reconnect?: boolean;
  /** Reconnection attempts before giving up (default 6). */
  maxRetries?: number;
  /** First wait before reconnecting, doubled at each attempt, ±20 % (default 250 ms). */
  retryDelayMs?: number;
  /** Longest wait between two attempts (default 8000 ms). */
  maxRetryDelayMs?: number;
  /** Frames kept while reconnecting (default 1000; beyond: a `queue_full` error event). */
  maxQueue?: number;
  /** After a reconnect, send the round's drawing again where the bot lacks it (default true). */
  replay?: boolean;
  /** Wait for `welcome` at most this long (default 15000 ms). */
  connectTimeoutMs?: number;
  /** A WebSocket constructor (default: the global one; Node < 22: e.g. the `ws` package's). */
  WebSocket?: new (url: string) => WebSocket;
}

export interface Limits {
  max_points: number;
  max_stroke_points: number;
  max_strokes: number;
  max_frame_bytes: number;
  points_per_s?: number;
  max_message_rate?: number;
  max_message_burst?: number;
  idle_timeout_s?: number;
}

export interface OpenRound {
  round: string | number;
  strokes: number;
  said: string[];
  open_stroke: boolean;
}

export interface Welcome {
  type: "welcome";
  protocol: "griffon-bot";
  version: number;
  session: string;
  transcript: string;
  transcript_key: string;
  levels: string[];
  limits: Limits;
  /** v2 */
  resume_token?: string;
  resumed?: boolean;
  y?: YDirection;
  paces?: Pace[];
  round?: OpenRound;
  /** The bot can take a drawing turn (`drawTurn`). */
  draws?: boolean;
}

export interface RoundReady {
  type: "round_ready";
  round: string | number;
  difficulty: string;
  candidates: number | null;
  seed: number;
  /** v2 */
  pace?: Pace;
  /** v2: the candidates the bot cannot guess, as sent (ignored for guessing). */
  unknown?: string[];
  reaction_s?: number;
  hold_s?: number;
}

export interface Guess {
  type: "guess";
  round: string | number;
  guess_id: number;
  /** The candidate exactly as the room sent it (without candidates: the word in the round's language). */
  text: string;
  /** The category guessed. */
  label: string;
  word: string;
  prob: number;
  at_s: number;
  strokes: number;
}

export interface Analysis {
  type: "analysis";
  round: string | number;
  strokes: number;
  top: { label: string; word: string; prob: number }[];
  ms: number;
}

export interface RoundOver {
  type: "round_over";
  round: string | number;
  said: string[];
  strokes: number;
  /** v2: "round_end" after endRound, "replaced" when a new round started over it. */
  why?: "round_end" | "replaced";
  drawing_kept?: boolean;
}

/** The bot's drawing turn (v2): the answer to `drawTurn`, then its events. */
export interface DrawStart {
  type: "draw_start";
  turn: string | number;
  word: string;
  /** The category drawn. */
  label: string;
  strokes: number;
  width: number;
  height: number;
  /** Seconds from draw_start to draw_done. */
  duration_s: number;
}

export interface DrawDeclined {
  type: "draw_declined";
  turn: string | number;
  word: string;
  reason: "unknown_word" | "no_drawing";
  message: string;
}

export interface DrawPoints {
  type: "draw_points";
  turn: string | number;
  /** The stroke's index from 0: its first draw_points puts the pen down. */
  stroke: number;
  x: number[];
  y: number[];
  /** ms since draw_start. */
  t: number[];
}

export interface DrawStrokeEnd {
  type: "draw_stroke_end";
  turn: string | number;
  stroke: number;
}

export interface DrawDone {
  type: "draw_done";
  turn: string | number;
  strokes: number;
  /** true: drawStop (or a new drawTurn) ended it before the last stroke. */
  stopped: boolean;
}

export interface DrawTurnOptions {
  turn?: string | number;
  word: string;
  language?: "fr" | "en";
  /** The room's canvas (default 255 × 255); the drawing is fitted and centred in it. */
  width?: number;
  height?: number;
  /** The turn's length: the drawing is done within about 0.7 of it (default 60). */
  durationS?: number;
  seed?: number;
}

export interface Region {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface WordsChecked {
  language: "fr" | "en";
  known: number;
  unknown: string[];
  words: { word: string; categories: string[]; french: string[] }[];
}

export interface Resumed {
  /** true: the same session (v2); false: a new session, the round sent again (`replay`). */
  resumed: boolean;
  round: OpenRound | null;
  welcome: Welcome;
}

export interface Reconnecting {
  attempt: number;
  delayMs: number;
  closeCode: number;
}

export interface Closed {
  code: number;
  reason: string;
}

export declare class GriffonBotError extends Error {
  code: ErrorCode;
  /** The `id` of the frame that caused it, when the server said. */
  ref?: string | number;
  /** Seconds to wait before trying again (`overloaded`). */
  retryAfter?: number;
  /** The socket's close code, when the error closed it. */
  closeCode?: number;
  /** true: this client refused the call before sending anything. */
  local: boolean;
  /** The error frame as received. */
  frame?: { type: "error"; code: string; message: string; ref?: string | number };
}

export interface EventMap {
  welcome: Welcome;
  roundReady: RoundReady;
  guess: Guess;
  analysis: Analysis;
  roundOver: RoundOver;
  error: GriffonBotError;
  close: Closed;
  resumed: Resumed;
  reconnecting: Reconnecting;
  drawStart: DrawStart;
  drawDeclined: DrawDeclined;
  drawPoints: DrawPoints;
  drawStrokeEnd: DrawStrokeEnd;
  drawDone: DrawDone;
  frame: { type: string; [field: string]: unknown };
}

export interface RoundOptions {
  round: string | number;
  candidates?: string[];
  game?: "kontour" | "pictomania" | "other";
  language?: "fr" | "en";
  difficulty?: string;
  /** v2 only (ignored on a v1 server). */
  pace?: Pace;
  durationS?: number;
  seed?: number;
  /** v2: seconds the bot takes to read each stroke (either pace). */
  reactionS?: number;
  /** v2: the bot says nothing during the round's first holdS seconds. */
  holdS?: number;
}

export declare class GriffonBot {
  constructor(url: string, options?: ConnectOptions);
  readonly url: string;
  readonly welcome: Welcome | null;
  /** The protocol version in use (after `welcome`). */
  readonly version: number | null;
  readonly limits: Limits;
  readonly state: "new" | "connecting" | "open" | "reconnecting" | "closing" | "closed";
  on<K extends keyof EventMap>(type: K, listener: (value: EventMap[K]) => void): () => void;
  off<K extends keyof EventMap>(type: K, listener: (value: EventMap[K]) => void): void;
  once<K extends keyof EventMap>(type: K, listener: (value: EventMap[K]) => void): () => void;
  /** Open the socket and greet (what `connect` does). */
  open(): Promise<Welcome>;
  startRound(options: RoundOptions): Promise<RoundReady>;
  strokeStart(x: number, y: number, t?: number): void;
  points(xs: number[], ys: number[], ts?: number[]): void;
  strokeEnd(): void;
  stroke(xs: number[], ys: number[], ts?: number[]): void;
  undo(): void;
  /** v2: erase stroke number `stroke`, or every point inside `region` (no-op on a v1 server). */
  erase(options: { stroke: number } | { region: Region }): void;
  /** v2: a fill (the bot ignores it; no-op on a v1 server). */
  fill(options?: { x?: number; y?: number; color?: string }): void;
  /** v2: the bot's turn to draw; resolves with draw_start (then drawPoints… events) or draw_declined. */
  drawTurn(options: DrawTurnOptions): Promise<DrawStart | DrawDeclined>;
  /** v2: end the bot's drawing turn early. */
  drawStop(): void;
  clear(): void;
  playerGuess(text: string, options?: { player?: string; correct?: boolean }): void;
  verdict(guessId: number, options?: { correct?: boolean; gesture?: Gesture }): void;
  endRound(options?: { answer?: string; drawingConsent?: boolean }): Promise<RoundOver>;
  ping(): Promise<{ type: "pong" }>;
  /** Say bye and close. */
  close(): Promise<Closed>;
  /** Close the socket without bye, as a lost network would (the client then reconnects). */
  drop(): void;
  /** Send a frame as it is, unchecked. */
  raw(frame: object | string): void;
}

export declare function connect(url: string, options?: ConnectOptions): Promise<GriffonBot>;

/** `POST /v1/words/check` on the server of `url` (ws:// or http://): which words the bot can guess. */
export declare function checkWords(
  url: string, words: string[], options?: { language?: "fr" | "en"; fetch?: typeof fetch },
): Promise<WordsChecked>;

/** The strokes without their points inside `region` (a crossing stroke is cut in two). */
export declare function eraseRegion(strokes: number[][][], region: Region): number[][][];
