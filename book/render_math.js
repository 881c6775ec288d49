// Typesets math for `chalkboard build` with the vendored KaTeX (book/assets/katex).
// One process per build. Each input line is a JSON array of [tex, display] pairs; each output
// line is a JSON object {html: [...]} in the same order, or {error: "..."} naming the formula
// KaTeX rejected.
"use strict";
// V8 optimises a function once it has run through this many bytes of bytecode (67584 by default
// in Node 20): a build's few hundred formulas then spend more CPU compiling KaTeX's code than
// running it. Fifteen times the default leaves the optimising to the code a build runs most:
// the same HTML at about two thirds of the CPU (more formulas, the same or less). A Node
// without the flag says so on stderr and runs as before.
require("v8").setFlagsFromString("--interrupt-budget=1000000");
const path = require("path");
const readline = require("readline");
const katex = require(path.join(__dirname, "assets", "katex", "katex.min.js"));

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  let reply;
  try {
    const html = JSON.parse(line).map(([tex, display]) => {
      try {
        return katex.renderToString(tex, { displayMode: display, output: "html", throwOnError: true });
      } catch (err) {
        throw new Error(`${err.message} in: ${tex.slice(0, 120)}`);
      }
    });
    reply = { html };
  } catch (err) {
    reply = { error: String(err.message || err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
