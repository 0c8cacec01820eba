// Triggers: each trigger with its last evaluations, and buttons that evaluate it.
import { hasOperation } from "../api.js";
import { h, replace } from "../dom.js";

export const title = "Triggers";

export async function render(root) {
  replace(root, h("div", { class: "page-header" }, h("div", {}, h("h1", {}, "Triggers"))));
  if (!(await hasOperation("UiTriggers"))) {
    root.append(h("div", { class: "card empty" }, h("p", {}, "This server has no triggers yet.")));
  }
}
