// dialscore web app: the little that needs a script. Every page works without it.
"use strict";

// Copy buttons: <button data-copy="id-of-field">.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  if (!field) return;
  field.select();
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard) {
    navigator.clipboard.writeText(field.value).then(done, () => document.execCommand("copy") && done());
  } else if (document.execCommand("copy")) {
    done();
  }
});

// Live progress: an element with data-progress-url is refreshed until its job is finished.
// The URL answers {"status", "label" (the status in words), "processed", "total", "finished"}.
function followProgress(element) {
  const url = element.dataset.progressUrl;
  const bar = element.querySelector("progress");
  const text = element.querySelector("[data-progress-text]");
  const tick = () => {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then((progress) => {
        if (bar) { bar.max = Math.max(progress.total, 1); bar.value = progress.processed; }
        if (text) text.textContent = `${progress.label}: ${progress.processed} of ${progress.total}`;
        if (progress.finished) {
          if (element.dataset.reloadWhenFinished !== undefined) window.location.reload();
        } else {
          window.setTimeout(tick, 1000);
        }
      })
      .catch(() => window.setTimeout(tick, 5000));
  };
  window.setTimeout(tick, 1000);
}
document.querySelectorAll("[data-progress-url]").forEach(followProgress);

// Self-reloading pages: an element with data-reload-every="seconds" reloads the page that
// often, but not while someone is typing in one of its forms (what they typed would be lost).
function reloadEvery(element) {
  const seconds = Number(element.dataset.reloadEvery) || 10;
  let typed = false;
  document.addEventListener("input", () => { typed = true; });
  const busy = () => {
    const active = document.activeElement;
    return typed || (active && active.closest("form") && active.matches("input, textarea, select"));
  };
  const tick = () => {
    if (busy()) window.setTimeout(tick, seconds * 1000);
    else window.location.reload();
  };
  window.setTimeout(tick, seconds * 1000);
}
document.querySelectorAll("[data-reload-every]").forEach(reloadEvery);
