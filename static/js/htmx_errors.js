// What a person sees when an htmx request fails; config/errors.py is the server's side.
//
// htmx swaps 400 and 409 answers itself (base.html's htmx-config): a form comes back with its
// errors, a refusal is a fragment aimed at the error region (#errors). Everything else is
// handled here:
// - any other failure is written into the region as text: the message of the server's error
//   fragment (HX-Retarget: global #errors) or a plain sentence for the status (with the
//   X-Request-ID for a server error), never the answer's HTML;
// - a whole HTML page is never swapped into a fragment;
// - a failure is reported even when a live update replaced the element that asked;
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

  // Answers already reported (in the region or in place): reported once, never cleared by
  // their own end.
  var reported = new WeakSet();

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

  // The server's error answers (config/errors.py) are retargeted at the region.
  function isErrorFragment(xhr) {
    var target = xhr.getResponseHeader("HX-Retarget") || "";
    return target.replace(/^global /, "") === "#" + REGION_ID;
  }

  function fragmentText(xhr) {
    var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var message = doc.querySelector(".message");
    return message ? message.textContent.trim() : "";
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

  // Answers htmx swapped where the request came from (a form with its errors).
  var inPlace = new WeakSet();

  // Reports a failed answer once, from whichever of htmx's events or the request's own end
  // comes first.
  function reportFailure(detail) {
    var xhr = detail.xhr;
    if (!xhr || reported.has(xhr)) return;
    reported.add(xhr);
    clearSuccess(detail);
    if (inPlace.has(xhr)) {
      clearToast(); // the errors are where the person acted; an older message would mislead
      return;
    }
    var fragment = isErrorFragment(xhr) && !isWholePage(xhr.responseText);
    if (fragment && (xhr.status === 400 || xhr.status === 409)) return; // htmx put it there
    showToast((fragment && fragmentText(xhr)) || statusSentence(xhr));
  }

  function reportUnanswered(detail, text) {
    if (reported.has(detail.xhr)) return;
    reported.add(detail.xhr);
    clearSuccess(detail);
    showToast(text);
  }

  function succeeded(detail) {
    if (!reported.has(detail.xhr) && byPerson(detail)) clearToast();
  }

  // htmx sends its events to the element that asked; when a live update has replaced that
  // element meanwhile they reach nobody. The request's own end always arrives.
  function watch(detail) {
    var xhr = detail.xhr;
    var aborted = false;
    xhr.addEventListener("abort", function () {
      aborted = true;
    });
    xhr.addEventListener("timeout", function () {
      reportUnanswered(detail, TIMEOUT);
    });
    xhr.addEventListener("loadend", function () {
      if (aborted) return;
      if (xhr.status === 0) reportUnanswered(detail, NETWORK);
      else if (xhr.status >= 400) reportFailure(detail);
      else succeeded(detail);
    });
  }

  document.addEventListener("htmx:beforeRequest", function (evt) {
    clearSuccess(evt.detail);
    if (evt.detail.xhr) watch(evt.detail);
  });

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var detail = evt.detail;
    var xhr = detail.xhr;
    if (!xhr || !detail.shouldSwap) return;
    if (!isWholePage(xhr.responseText)) {
      if (xhr.status >= 400 && !isErrorFragment(xhr)) inPlace.add(xhr);
      return;
    }
    detail.shouldSwap = false;
    if (xhr.status >= 400) return; // reported as a failure
    var requested = detail.pathInfo && detail.pathInfo.requestPath;
    var landed = xhr.responseURL ? new URL(xhr.responseURL) : null;
    if (landed && requested && landed.pathname !== requested.split("?")[0]) {
      // The request was redirected to a page: show that page, not a page inside this one.
      window.location.assign(landed.href);
      return;
    }
    reported.add(xhr);
    showToast(NOT_SHOWN);
  });

  document.addEventListener("htmx:responseError", function (evt) {
    reportFailure(evt.detail);
  });

  document.addEventListener("htmx:afterRequest", function (evt) {
    var detail = evt.detail;
    if (detail.xhr && detail.xhr.status >= 200 && detail.xhr.status < 400) succeeded(detail);
  });

  document.addEventListener("htmx:sendError", function (evt) {
    reportUnanswered(evt.detail, NETWORK);
  });

  document.addEventListener("htmx:timeout", function (evt) {
    reportUnanswered(evt.detail, TIMEOUT);
  });

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("[data-toast-dismiss]");
    if (!button) return;
    clearToast();
    var main = document.getElementById("main");
    if (main) main.focus();
  });
})();
