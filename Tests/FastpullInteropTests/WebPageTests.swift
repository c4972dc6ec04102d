import FastpullFixtures
import Foundation
import Testing

/// The daemon's own page in a real browser (headless Chromium, driven by selenium): a URL typed and
/// added, its row active with a pause button, paused and resumed with the row's buttons, and complete.
@Suite("fastpull daemon's web page in Chromium")
struct WebPageTests {
    @Test func addPauseResumeInTheBrowser() async throws {
        try await InteropFolder.with("webpage") { folder in
            // 8 MiB at 2 MB/s in all, however many connections: at least 4 s, so the row is still
            // active when its pause button is clicked, whatever the machine's load.
            var settings = FixtureServer.Configuration()
            settings.totalRate = 2_000_000
            let server = try FixtureServer(settings)
            let (daemon, port) = try await DaemonHarness.start(in: folder)
            let url = server.url("/gen/\(8 << 20)?seed=41").absoluteString
            let script = """
                import json, time
                from selenium import webdriver
                from selenium.webdriver.common.by import By
                from selenium.webdriver.chrome.service import Service
                from selenium.common.exceptions import StaleElementReferenceException, NoSuchElementException
                options = webdriver.ChromeOptions()
                for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
                    options.add_argument(flag)
                driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
                seen = {}
                def retry(action):
                    # The page redraws its rows every second: an element found a moment ago may be gone.
                    for _ in range(100):
                        try:
                            return action()
                        except (StaleElementReferenceException, NoSuchElementException):
                            time.sleep(0.05)
                    return action()
                def status():
                    cells = retry(lambda: [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#rows tr td.status")])
                    return cells[0] if cells else None
                def wait_for(wanted):
                    for _ in range(1200):
                        if status() == wanted:
                            return wanted
                        time.sleep(0.05)
                    return status()
                try:
                    driver.get("http://127.0.0.1:\(port)/")
                    seen["title"] = driver.title
                    driver.find_element(By.ID, "url").send_keys("\(url)")
                    driver.find_element(By.CSS_SELECTOR, "#add button").click()
                    seen["added"] = wait_for("active")
                    retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr button.aria2\\\\.pause").click())
                    seen["paused"] = wait_for("paused")
                    retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr button.aria2\\\\.unpause").click())
                    seen["finished"] = wait_for("complete")
                    seen["name"] = retry(lambda: driver.find_element(By.CSS_SELECTOR, "#rows tr td").text)
                    seen["message"] = driver.find_element(By.ID, "message").text
                finally:
                    driver.quit()
                print(json.dumps(seen))
                """
            let result = try await DaemonHarness.python(script)
            daemon.interrupt()
            _ = await daemon.finished()
            #expect(result.status == 0, "selenium: \(result.stderr)")
            let seen =
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String] ?? [:]
            #expect(seen["title"] == "fastpull")
            #expect(seen["added"] == "active", "\(seen)")
            #expect(seen["paused"] == "paused", "\(seen)")
            #expect(seen["finished"] == "complete", "\(seen)")
            #expect(seen["message"] == "", "\(seen)")
            let name = try #require(seen["name"])
            let file = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            #expect(file == Data(FixtureContent.bytes(count: 8 << 20, seed: 41)))
        }
    }
}
