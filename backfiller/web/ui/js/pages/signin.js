// Sign-in: shown when the API answers 401. The pasted token stays in sessionStorage (this tab
// only) and goes out as `Authorization: Bearer ...` through api.js.
import { AuthRequired, getToken, graphql, setToken } from "../api.js";
import { errorBox, h, replace } from "../dom.js";

export const title = "Sign in";

export async function render(root, { query }) {
  const next = query.next && query.next.startsWith("#/") && !query.next.startsWith("#/signin") ? query.next : "#/backfills";
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
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Sign in");
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
  replace(
    root,
    h(
      "section",
      { class: "card signin-card", "aria-labelledby": "signin-title" },
      h("h1", { id: "signin-title" }, "Sign in"),
      h("p", { class: "lede" }, "This server needs an API token."),
      form,
    ),
  );
  tokenInput.focus();
}
