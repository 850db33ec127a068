// Writes griffon-bot.cjs, the CommonJS build of griffon-bot.js, for projects without
// `"type": "module"` (`const { connect } = require("./griffon-bot.cjs")`): the same code, its
// `export` keywords dropped and a `module.exports` added. `--check` fails when the file is stale.
//   node tools/build-cjs.mjs [--check]
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (name) => fileURLToPath(new URL(`../${name}`, import.meta.url));
const source = readFileSync(here("griffon-bot.js"), "utf8");
const names = [];
const body = source.replace(/^export (async function|function|class|const) (\w+)/gm, (_, kind, name) => {
  names.push(name);
  return `${kind} ${name}`;
});
if (/^\s*(import|export)\b/m.test(body)) throw new Error("griffon-bot.js has an import or export this build cannot convert");
const built = `// GENERATED from griffon-bot.js by tools/build-cjs.mjs: do not edit (edit griffon-bot.js, then
// run \`node tools/build-cjs.mjs\`).
"use strict";
${body}
module.exports = { ${names.join(", ")} };
`;
if (process.argv.includes("--check")) {
  if (readFileSync(here("griffon-bot.cjs"), "utf8") !== built) {
    console.error("griffon-bot.cjs is stale: run node tools/build-cjs.mjs");
    process.exit(1);
  }
} else {
  writeFileSync(here("griffon-bot.cjs"), built);
}
