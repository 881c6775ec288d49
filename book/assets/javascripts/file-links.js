/* Opened from the file system (file://), a link to a folder ("../chapters/batching/", as the
 * site's links and search results are written) would show the folder's listing: it opens the
 * folder's index.html instead. Over http this script does nothing. */
(function () {
  "use strict";
  if (typeof location === "undefined" || location.protocol !== "file:") return;

  function follow(event) {
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || link.protocol !== "file:" || !/\/$/.test(link.pathname)) return;
    link.pathname += "index.html"; /* keeps the query and the #fragment */
  }
  document.addEventListener("click", follow, true);
  document.addEventListener("auxclick", follow, true);
})();
