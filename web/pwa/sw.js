// The gateway's service worker. It caches only the shell (the manifest
// and the icons): never a page, a decision or a request's data, which
// always come from the network. It shows Web Push notifications and acts
// on their Allow once and Deny with the one-time token each came with.
"use strict";

const SHELL = "gateway-shell-v1";
const SHELL_URLS = ["/manifest.webmanifest", "/icons/icon-192.png", "/icons/icon-512.png"];

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(SHELL).then((c) => c.addAll(SHELL_URLS)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => {
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== SHELL).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener("fetch", (e) => {
  const u = new URL(e.request.url);
  if (e.request.method !== "GET" || u.origin !== self.location.origin || !SHELL_URLS.includes(u.pathname)) {
    return; // the network, uncached
  }
  e.respondWith(caches.match(e.request).then((r) => r || fetch(e.request)));
});

// showPush turns a push's payload into a notification. The tag is the
// request id, so the outcome replaces the card; the actions appear where
// the platform shows them (Chrome on Android and desktop).
function showPush(p) {
  const opts = {
    body: p.body || "", tag: p.tag || p.id, icon: "/icons/icon-192.png", badge: "/icons/icon-192.png",
    timestamp: Date.now(), data: {id: p.id, url: p.url || "/", tokens: {}},
    renotify: p.status === "pending", requireInteraction: p.status === "pending",
  };
  const acts = Array.isArray(p.actions) ? p.actions : [];
  if (acts.length > 0) {
    opts.actions = acts.map((a) => ({action: a.action, title: a.title}));
    for (const a of acts) opts.data.tokens[a.action] = a.token;
  }
  return self.registration.showNotification(p.title || "gateway", opts);
}

self.addEventListener("push", (e) => {
  let p;
  try { p = e.data.json(); } catch (err) { return; }
  e.waitUntil(showPush(p));
});

// openRequest focuses a window on the request's page, or opens one
// (login first if the session ended; the passkey there for a step-up).
function openRequest(url) {
  return self.clients.matchAll({type: "window", includeUncontrolled: true}).then((wins) => {
    for (const w of wins) {
      if (new URL(w.url).pathname === url && "focus" in w) return w.focus();
    }
    return self.clients.openWindow(url);
  });
}

// act posts the action's one-time token; the answer's words replace the
// notification. A token refused (spent, expired, the request changed)
// opens the request instead: nothing was decided.
function act(n, action) {
  const d = n.data || {};
  const token = d.tokens && d.tokens[action];
  n.close();
  if (!token) return openRequest(d.url || "/");
  return fetch("/web/push/act", {method: "POST", body: new URLSearchParams({token}), credentials: "omit", cache: "no-store"})
    .then((r) => r.json().then((j) => ({ok: r.ok, j})))
    .then(({ok, j}) => ok
      ? self.registration.showNotification(n.title, {body: j.text || "", tag: n.tag, data: {id: d.id, url: d.url}})
      : openRequest(d.url || "/"))
    .catch(() => openRequest(d.url || "/"));
}

self.addEventListener("notificationclick", (e) => {
  e.waitUntil(act(e.notification, e.action));
});
