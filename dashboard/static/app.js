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

// <div data-needed-by="asaas random"> holds a payer field the cashier shows, and requires, only
// while one of those PSPs is chosen in #provider (without this file every field shows and the
// server reads the chosen PSP's).
function payerFields(root) {
  const select = root.querySelector('select#provider');
  const fields = root.querySelectorAll('[data-needed-by]');
  if (!select || fields.length === 0) return;
  const update = () => {
    for (const field of fields) {
      const needed = field.dataset.neededBy.split(' ').includes(select.value);
      field.hidden = !needed;
      for (const input of field.querySelectorAll('input')) {
        input.disabled = !needed;
        input.required = needed;
      }
    }
  };
  select.addEventListener('change', update);
  update();
}

// Closes the user menu when clicking elsewhere.
function menus() {
  document.addEventListener('click', (event) => {
    for (const details of document.querySelectorAll('details.user-menu[open]')) {
      if (!details.contains(event.target)) details.open = false;
    }
  });
}

// <section class="live-charge" data-stream data-status data-expires-at>: follows the charge's
// status over server-sent events (EventSource reconnects by itself); when the stream cannot
// be had, asks the status URL every 3 s. Switches `data-state`, which CSS turns into the
// paid/expired/canceled panels, and counts down to the expiry.
function liveCharges(root) {
  for (const section of root.querySelectorAll('.live-charge[data-stream]')) {
    const final = (state) => ['paid', 'expired', 'canceled', 'failed'].includes(state);
    const apply = (update) => {
      if (!update || !update.status) return;
      section.dataset.state = update.status;
      const paidAt = section.querySelector('[data-paid-at]');
      const amount = section.querySelector('[data-amount-paid]');
      if (update.paid_at && paidAt) paidAt.textContent = update.paid_at;
      if (update.amount_paid && amount) amount.textContent = update.amount_paid;
      if (final(update.status)) stop();
    };
    let source = null;
    let poller = null;
    const stop = () => {
      if (source) source.close();
      if (poller) clearInterval(poller);
      source = null;
      poller = null;
    };
    const poll = () => {
      if (poller || final(section.dataset.state)) return;
      poller = setInterval(async () => {
        try {
          const answer = await fetch(section.dataset.status, { headers: { accept: 'application/json' } });
          if (answer.ok) apply(await answer.json());
        } catch { /* offline for a moment: try again at the next tick */ }
      }, 3000);
    };
    if (final(section.dataset.state)) continue;
    if ('EventSource' in window) {
      source = new EventSource(section.dataset.stream);
      source.addEventListener('status', (event) => apply(JSON.parse(event.data)));
      // A closed stream (the server refused it, or went away for good) falls back to polling;
      // a broken connection is retried by EventSource itself.
      source.addEventListener('error', () => {
        if (source && source.readyState === EventSource.CLOSED) { source = null; poll(); }
      });
    } else {
      poll();
    }
    const countdown = section.querySelector('[data-countdown]');
    const expiresAt = Number(section.dataset.expiresAt);
    if (countdown && expiresAt) {
      const tick = () => {
        const left = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000));
        const minutes = Math.floor(left / 60);
        const seconds = String(left % 60).padStart(2, '0');
        countdown.textContent = `${minutes}:${seconds}`;
      };
      tick();
      setInterval(tick, 1000);
    }
  }
}

// <form data-evidence-form>: the sale's photo and place. Shows the "use my location" button,
// which fills the hidden latitude/longitude/accuracy fields from the browser's geolocation
// (the typed address stays the alternative), and refuses a photo over data-max-bytes before
// sending it.
function evidenceForms(root) {
  for (const form of root.querySelectorAll('form[data-evidence-form]')) {
    const locate = form.querySelector('[data-locate]');
    const button = locate && locate.querySelector('button');
    const status = form.querySelector('[data-location-status]');
    const field = (name) => form.querySelector(`input[name=${name}]`);
    if (locate && button && status && 'geolocation' in navigator) {
      locate.hidden = false;
      button.addEventListener('click', () => {
        status.textContent = button.dataset.locating;
        button.disabled = true;
        navigator.geolocation.getCurrentPosition((position) => {
          const { latitude, longitude, accuracy } = position.coords;
          field('latitude').value = String(latitude);
          field('longitude').value = String(longitude);
          field('accuracy').value = String(accuracy);
          status.textContent = button.dataset.located
            .replace('{latitude}', latitude.toFixed(5))
            .replace('{longitude}', longitude.toFixed(5))
            .replace('{accuracy}', String(Math.round(accuracy)));
          form.dataset.located = 'true';
          button.disabled = false;
        }, () => {
          status.textContent = button.dataset.denied;
          button.disabled = false;
        }, { enableHighAccuracy: true, timeout: 15000, maximumAge: 60000 });
      });
    }
    const photo = field('photo');
    form.addEventListener('submit', (event) => {
      const file = photo && photo.files && photo.files[0];
      const max = Number(form.dataset.maxBytes);
      if (file && max && file.size > max) {
        event.preventDefault();
        photo.setCustomValidity(form.dataset.tooLarge);
        photo.reportValidity();
      }
    });
    if (photo) photo.addEventListener('change', () => photo.setCustomValidity(''));
  }
}

copyButtons(document);
fileInputs(document);
evidenceForms(document);
confirmForms(document);
autoSubmit(document);
payerFields(document);
menus();
liveCharges(document);
