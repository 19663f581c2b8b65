// What a person sees when an htmx request fails; config/errors.py is the server's side.
//
// htmx swaps 400 and 409 answers itself (base.html's htmx-config): a form comes back with its
// errors, a refusal is a fragment aimed at the error region (#errors). Everything else is
// handled here:
// - another status whose answer is the server's error fragment (HX-Retarget: #errors) is
//   swapped into the region too; any other failed answer becomes a plain sentence there
//   (with the X-Request-ID for a server error), never the answer's HTML;
// - a whole HTML page is never swapped into a fragment;
// - a network failure says so;
// - success text near the action ("Saved.") is removed when a request starts or fails;
// - the region has a Dismiss button and empties after the person's next request that
//   succeeds or shows its errors in place.
(function () {
  "use strict";

  var REGION_ID = "errors";
  var SENTENCES = {
    400: "That request was not accepted. Reload the page and try again.",
    401: "You are signed out. Sign in and try again.",
    403: "You may not do that here.",
    404: "That is not here any more: it may have been removed. Reload the page.",
    405: "That action is not available here. Reload the page.",
    409: "That changed in the meantime. Reload the page and try again.",
    413: "That is too large to send.",
    429: "Too many requests in a short time. Wait a moment and try again."
  };
  var NETWORK = "Could not reach the server. Check your connection and try again.";
  var TIMEOUT = "The server took too long to answer. Try again in a moment.";
  var NOT_SHOWN = "The answer could not be shown here. Reload the page.";

  // Requests whose outcome is already in the region: their end must not empty it.
  var toasted = new WeakSet();

  function region() {
    return document.getElementById(REGION_ID);
  }

  function showToast(text) {
    var el = region();
    if (!el) return;
    var message = document.createElement("p");
    message.className = "message message-error";
    message.setAttribute("role", "alert");
    message.textContent = text;
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "toast-dismiss";
    dismiss.setAttribute("data-toast-dismiss", "");
    dismiss.textContent = "Dismiss";
    el.replaceChildren(message, dismiss);
  }

  function clearToast() {
    var el = region();
    if (el && el.firstChild) el.replaceChildren();
  }

  function statusSentence(xhr) {
    if (xhr.status >= 500) {
      var id = xhr.getResponseHeader("X-Request-ID");
      return id
        ? "Something went wrong on our side (request " + id + "). It has been logged."
        : "Something went wrong on our side. Try again in a moment.";
    }
    return SENTENCES[xhr.status] || SENTENCES[400];
  }

  function isErrorFragment(xhr) {
    return xhr.getResponseHeader("HX-Retarget") === "#" + REGION_ID;
  }

  function isWholePage(text) {
    return /^\s*(<!doctype|<html[\s>])/i.test(text || "");
  }

  // A background load (a lazy GET) must not empty a message the person has not read yet.
  function byPerson(detail) {
    var config = detail.requestConfig || {};
    var trigger = config.triggeringEvent;
    return config.verb !== "get" || Boolean(trigger && trigger.isTrusted);
  }

  function clearSuccess(detail) {
    var scopes = [];
    [detail.elt, detail.target].forEach(function (node) {
      if (node && node.closest) scopes.push(node.closest("section, .card, form") || node);
    });
    scopes.forEach(function (scope) {
      scope.querySelectorAll(".message-success").forEach(function (m) {
        m.remove();
      });
    });
    // Messages left by the last page load ("Workspace rules saved.").
    document.querySelectorAll("main > .messages .message-success").forEach(function (m) {
      m.remove();
    });
  }

  document.addEventListener("htmx:beforeRequest", function (evt) {
    clearSuccess(evt.detail);
  });

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var detail = evt.detail;
    var xhr = detail.xhr;
    if (!xhr) return;
    if (xhr.status >= 400 && isErrorFragment(xhr)) {
      detail.shouldSwap = true;
      detail.isError = true;
      toasted.add(xhr);
      return;
    }
    if (!detail.shouldSwap || !isWholePage(xhr.responseText)) return;
    detail.shouldSwap = false;
    if (xhr.status >= 400) return; // responseError below says what happened
    var requested = detail.pathInfo && detail.pathInfo.requestPath;
    var landed = xhr.responseURL ? new URL(xhr.responseURL) : null;
    if (landed && requested && landed.pathname !== requested.split("?")[0]) {
      // The request was redirected to a page: show that page, not a page inside this one.
      window.location.assign(landed.href);
      return;
    }
    toasted.add(xhr);
    showToast(NOT_SHOWN);
  });

  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    clearSuccess(evt.detail);
    if (!xhr || toasted.has(xhr)) return;
    if (xhr.status === 400 || xhr.status === 409) {
      if (!isWholePage(xhr.responseText)) return; // swapped by htmx: a form with its errors
    }
    toasted.add(xhr);
    showToast(statusSentence(xhr));
  });

  document.addEventListener("htmx:afterRequest", function (evt) {
    var detail = evt.detail;
    if (!detail.xhr || detail.xhr.status === 0) return; // no answer: sendError/timeout say so
    if (!toasted.has(detail.xhr) && byPerson(detail)) clearToast();
  });

  document.addEventListener("htmx:sendError", function (evt) {
    clearSuccess(evt.detail);
    showToast(NETWORK);
  });

  document.addEventListener("htmx:timeout", function (evt) {
    clearSuccess(evt.detail);
    showToast(TIMEOUT);
  });

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("[data-toast-dismiss]");
    if (!button) return;
    clearToast();
    var main = document.getElementById("main");
    if (main) main.focus();
  });
})();
