// Sign-in: shown when the API answers 401. With single sign-on configured (serve
// --oidc-issuer), a button goes to the identity provider (/auth/login); a pasted API token
// works too, kept in sessionStorage (this tab only) and sent as `Authorization: Bearer ...`.
import { AuthRequired, getToken, graphql, loadSession, setToken } from "../api.js";
import { errorBox, h, replace } from "../dom.js";

export const title = "Sign in";

function tokenForm(next) {
  const tokenInput = h("input", {
    id: "signin-token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    class: "mono",
    "aria-describedby": "signin-help signin-error",
  });
  const error = h("div", { id: "signin-error", role: "alert" });
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Sign in with the token");
  const form = h(
    "form",
    { class: "form", id: "signin-form", novalidate: true },
    h(
      "div",
      { class: "field" },
      h("label", { for: "signin-token" }, "API token"),
      tokenInput,
      h("p", { class: "help", id: "signin-help" }, "Paste a token from your administrator. It is kept in this browser tab only."),
    ),
    error,
    h("div", { class: "form-actions" }, submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = tokenInput.value.trim();
    replace(error);
    if (!token) {
      replace(error, h("p", { class: "field-error" }, "Paste a token."));
      tokenInput.focus();
      return;
    }
    const previous = getToken();
    setToken(token);
    submit.disabled = true;
    try {
      await graphql("UiApiVersion");
      location.hash = next;
    } catch (e) {
      setToken(previous);
      replace(error, e instanceof AuthRequired ? h("p", { class: "field-error" }, "The server refused this token.") : errorBox(e, "Could not check the token."));
      tokenInput.focus();
    } finally {
      submit.disabled = false;
    }
  });
  return { form, tokenInput };
}

export async function render(root, { query }) {
  const next = query.next && query.next.startsWith("#/") && !query.next.startsWith("#/signin") ? query.next : "#/backfills";
  const session = await loadSession();
  const { form, tokenInput } = tokenForm(next);
  const notices = [];
  if (query.error) notices.push(h("div", { class: "alert alert-error", role: "alert", id: "signin-refused" }, h("strong", {}, "Not signed in: "), query.error));
  if (query.signedOut) notices.push(h("div", { class: "alert alert-success", role: "status", id: "signed-out" }, "You are signed out."));
  if (session.ended) notices.push(h("div", { class: "alert alert-warning", role: "status", id: "session-ended" }, "Your session has ended. Sign in again."));
  const sso = session.sso
    ? h(
        "div",
        { class: "signin-sso" },
        h("a", { class: "btn btn-primary btn-large", id: "signin-sso", href: `/auth/login?next=${encodeURIComponent(next)}` }, "Sign in with single sign-on"),
        h("p", { class: "muted small" }, "Or, for a script's token:"),
      )
    : null;
  replace(
    root,
    h(
      "section",
      { class: "card signin-card", "aria-labelledby": "signin-title" },
      h("h1", { id: "signin-title" }, "Sign in"),
      h("p", { class: "lede" }, session.sso ? "Sign in with your company account." : "This server needs an API token."),
      notices,
      sso,
      form,
    ),
  );
  if (session.sso) document.getElementById("signin-sso").focus();
  else tokenInput.focus();
}
