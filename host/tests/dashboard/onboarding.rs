//! The onboarding a merchant does in a browser (headless Chromium): filled in once the pages
//! it crosses exist.
