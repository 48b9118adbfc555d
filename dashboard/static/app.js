// pixgw dashboard: progressive enhancement only. Every page works without this file; with it,
// buttons copy to the clipboard, certificate files load into their text areas, and
// destructive forms ask for confirmation.

// <button data-copy="#element-id" data-copied="Copiado"> copies the element's text (or value).
function copyButtons(root) {
  for (const button of root.querySelectorAll('[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.querySelector(button.dataset.copy);
      if (!source) return;
      const text = ('value' in source && source.value !== undefined && source.tagName !== 'BUTTON') ? source.value : source.textContent.trim();
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        // Older browsers, or a page not allowed to write: select the text for Ctrl+C.
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        document.execCommand && document.execCommand('copy');
      }
      const label = button.dataset.copied;
      if (label) {
        const original = button.textContent;
        button.textContent = label;
        button.classList.add('copied');
        setTimeout(() => { button.textContent = original; button.classList.remove('copied'); }, 2000);
      }
    });
  }
}

// <input type="file" data-into="field-id"> reads a PEM/.crt/.key file into the text area.
function fileInputs(root) {
  for (const input of root.querySelectorAll('input[type=file][data-into]')) {
    input.hidden = false;
    input.addEventListener('change', async () => {
      const file = input.files && input.files[0];
      const target = document.getElementById(input.dataset.into);
      if (!file || !target) return;
      target.value = (await file.text()).trim();
      target.dispatchEvent(new Event('input'));
    });
  }
}

// <form data-confirm="Really?"> asks before it submits.
function confirmForms(root) {
  for (const form of root.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
}

// <select data-autosubmit> submits its form when changed (filters).
function autoSubmit(root) {
  for (const select of root.querySelectorAll('[data-autosubmit]')) {
    select.addEventListener('change', () => select.form && select.form.requestSubmit());
  }
}

// Closes the user menu when clicking elsewhere.
function menus() {
  document.addEventListener('click', (event) => {
    for (const details of document.querySelectorAll('details.user-menu[open]')) {
      if (!details.contains(event.target)) details.open = false;
    }
  });
}

copyButtons(document);
fileInputs(document);
confirmForms(document);
autoSubmit(document);
menus();
