// Codecs on the dashboard: the queue view says which codec reads the queue's values (--codec,
// or the first --codec-for pattern that matches it), and each value says the Java class its
// bytes name, and the codec it was read with when that is not the queue's own (--codec auto
// tells it from the bytes).
"use strict";
let queueCodec = "";
function showQueueCodec(d) {
  queueCodec = d.codec || "";
  setText(document.querySelector("#detail-codec"), queueCodec ? "codec " + queueCodec : "");
}
// The note after a value's preview: `  [CODEC CLASS]`, or nothing to say.
function codecNote(x) {
  const said = [];
  if (x.codec && x.codec !== queueCodec) said.push(x.codec);
  if (x.class) said.push(x.class);
  return said.length ? "  [" + said.join(" ") + "]" : "";
}
