// Live updates: GraphQL subscriptions over graphql-transport-ws when the server offers them,
// polling otherwise and whenever the socket is down. A server restart only closes the socket:
// we poll meanwhile, reconnect with backoff, and resubscribe. The page is never reloaded.
import { API_PATH, ConnectionLost, authHeaders, events, hasOperation, loadSession, operationText, randomId, socketQuery } from "./api.js";

const PROTOCOL = "graphql-transport-ws";
const MAX_BACKOFF_MS = 15000;

class SocketClient {
  constructor() {
    this.socket = null;
    this.ready = false;
    this.subscriptions = new Map(); // id -> {payload, handlers}
    this.backoff = 1000;
    this.reconnectTimer = null;
    this.stopped = false; // signing out: no socket until signed in again
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.host}${API_PATH}${socketQuery()}`;
  }

  ensureConnected() {
    if (this.stopped || this.socket || this.reconnectTimer || typeof WebSocket === "undefined") return;
    let socket;
    try {
      socket = new WebSocket(this.url(), PROTOCOL);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      const headers = authHeaders();
      const payload = headers.Authorization ? { Authorization: headers.Authorization } : {};
      socket.send(JSON.stringify({ type: "connection_init", payload }));
    });
    socket.addEventListener("message", (event) => this.receive(event));
    socket.addEventListener("close", () => this.closed(socket));
    // "error" is always followed by "close"; nothing else to do.
    socket.addEventListener("error", () => {});
  }

  receive(event) {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    switch (message.type) {
      case "connection_ack":
        this.ready = true;
        this.backoff = 1000;
        for (const [id, sub] of this.subscriptions) this.sendSubscribe(id, sub);
        break;
      case "ping":
        this.socket?.send(JSON.stringify({ type: "pong" }));
        break;
      case "next": {
        const sub = this.subscriptions.get(message.id);
        if (!sub) break;
        if (message.payload?.errors?.length) sub.handlers.failed(message.payload.errors);
        else sub.handlers.next(message.payload?.data);
        break;
      }
      case "error": {
        const sub = this.subscriptions.get(message.id);
        if (sub) {
          this.subscriptions.delete(message.id);
          sub.handlers.failed(message.payload);
        }
        break;
      }
      case "complete": {
        const sub = this.subscriptions.get(message.id);
        if (sub) {
          this.subscriptions.delete(message.id);
          sub.handlers.completed();
        }
        break;
      }
      default:
        break;
    }
  }

  sendSubscribe(id, sub) {
    if (!this.ready || !this.socket) return;
    this.socket.send(JSON.stringify({ id, type: "subscribe", payload: sub.payload }));
    sub.handlers.active();
  }

  closed(socket) {
    if (this.socket !== socket) return;
    this.socket = null;
    this.ready = false;
    for (const sub of this.subscriptions.values()) sub.handlers.inactive();
    if (this.subscriptions.size) this.scheduleReconnect();
  }

  scheduleReconnect() {
    if (this.reconnectTimer) return;
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.subscriptions.size) this.ensureConnected();
    }, delay);
  }

  subscribe(payload, handlers) {
    const id = randomId();
    const sub = { payload, handlers };
    this.subscriptions.set(id, sub);
    if (this.ready) this.sendSubscribe(id, sub);
    else this.ensureConnected();
    return () => {
      if (!this.subscriptions.delete(id)) return;
      if (this.ready && this.socket) this.socket.send(JSON.stringify({ id, type: "complete" }));
      if (!this.subscriptions.size && this.socket) {
        const socket = this.socket;
        this.socket = null;
        this.ready = false;
        socket.close(1000);
      }
    };
  }

  /** Start afresh (after signing in: the token goes in connection_init). */
  reset() {
    if (this.stopped && (authHeaders().Authorization || socketQuery())) this.stopped = false;
    if (this.socket) this.socket.close(1000);
  }

  /** Close the socket and open none until signed in again: signing out ends the session, and
   * a socket opened meanwhile would be refused (403). */
  stop() {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const socket = this.socket;
    this.socket = null;
    this.ready = false;
    if (socket) socket.close(1000);
  }
}

const client = new SocketClient();
events.addEventListener("token", () => client.reset());
events.addEventListener("signing-out", () => client.stop());

/** Whether live updates currently come from a subscription (for the page's indicator). */
export const liveState = new EventTarget();

/**
 * Keep a view fresh. `refresh()` reloads what the view shows. With a subscription, each event
 * goes to `onEvent(data)` and polling pauses; without one (or while the socket is down) `refresh`
 * runs every `interval` ms, backing off while the server is unreachable.
 * Returns `stop()`.
 */
export function watch({ subscription, variables = {}, onEvent, refresh, interval = 2000, until }) {
  let stopped = false;
  let subscribed = false;
  let pollTimer = null;
  let unsubscribe = null;
  let delay = interval;

  const report = (mode) => liveState.dispatchEvent(new CustomEvent("mode", { detail: { mode } }));

  const schedule = (ms) => {
    clearTimeout(pollTimer);
    if (stopped) return;
    pollTimer = setTimeout(poll, ms);
  };

  async function poll() {
    if (stopped) return;
    if (until && until()) return;
    try {
      await refresh();
      delay = interval;
    } catch (error) {
      delay = error instanceof ConnectionLost ? Math.min(delay * 2, MAX_BACKOFF_MS) : interval * 2;
    }
    if (!subscribed) schedule(delay);
  }

  schedule(interval);
  report("polling");

  (async () => {
    if (!subscription) return;
    let available = false;
    try {
      available = await hasOperation(subscription);
      await loadSession(); // a session's socket carries its CSRF token (socketQuery)
    } catch {
      available = false;
    }
    if (!available || stopped || typeof WebSocket === "undefined") return;
    const query = await operationText(subscription);
    unsubscribe = client.subscribe(
      { query, operationName: subscription, variables },
      {
        active: () => {
          subscribed = true;
          clearTimeout(pollTimer);
          report("live");
          refresh().catch(() => {}); // catch up on what happened while we were away
        },
        inactive: () => {
          subscribed = false;
          report("polling");
          schedule(interval);
        },
        next: (data) => {
          if (!stopped && onEvent) onEvent(data);
        },
        failed: () => {
          subscribed = false;
          report("polling");
          schedule(interval);
        },
        completed: () => {
          subscribed = false;
          report("polling");
          schedule(interval);
        },
      },
    );
    if (stopped) unsubscribe();
  })();

  return () => {
    stopped = true;
    clearTimeout(pollTimer);
    if (unsubscribe) unsubscribe();
  };
}
