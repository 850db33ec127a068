// Short sound effects made on the spot with WebAudio (no sound files): a word found, a wrong
// guess, the last seconds of a turn or round, your turn to draw (Kontour), a round's end. « Son » in the header mutes them;
// the choice is kept in localStorage. The last sound played is written on <html data-sound>.

const KEY = "griffon.muted";
let audio = null;

export function isMuted() {
  try { return localStorage.getItem(KEY) === "1"; } catch { return false; }
}

export function setMuted(on) {
  try { localStorage.setItem(KEY, on ? "1" : "0"); } catch { /* storage off: this page only */ }
}

function tone(at, frequency, duration, { type = "sine", volume = 0.08 } = {}) {
  const oscillator = audio.createOscillator();
  const gain = audio.createGain();
  oscillator.type = type;
  oscillator.frequency.value = frequency;
  const start = audio.currentTime + at;
  gain.gain.setValueAtTime(0.0001, start);
  gain.gain.exponentialRampToValueAtTime(volume, start + 0.01);
  gain.gain.exponentialRampToValueAtTime(0.0001, start + duration);
  oscillator.connect(gain).connect(audio.destination);
  oscillator.start(start);
  oscillator.stop(start + duration + 0.02);
}

const SOUNDS = {
  found: () => { tone(0, 660, 0.14); tone(0.12, 880, 0.22); },            // two notes, rising
  wrong: () => tone(0, 170, 0.22, { type: "square", volume: 0.03 }),       // a low buzz
  tick: () => tone(0, 1050, 0.05, { type: "square", volume: 0.025 }),      // the last seconds
  turn: () => { tone(0, 587, 0.1); tone(0.12, 784, 0.1); tone(0.24, 587, 0.16); }, // your turn to draw
  end: () => { tone(0, 523, 0.12); tone(0.13, 659, 0.12); tone(0.26, 784, 0.25); }, // a round, a game
};

export function play(name) {
  if (isMuted() || !SOUNDS[name]) return;
  try {
    audio = audio || new AudioContext();
    if (audio.state === "suspended") audio.resume();
    SOUNDS[name]();
    document.documentElement.dataset.sound = name;
  } catch { /* no audio on this device: silence */ }
}
